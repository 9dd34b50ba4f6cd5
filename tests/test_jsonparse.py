"""netfleet.jsonparse.loads gives what json.loads gives: the same values where both accept a
text, the standard library's value where only it does, and its error where neither does."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfleet.jsonparse import loads

FIXTURES = Path(__file__).parent / "fixtures"

# JSON values as iperf3 and netfleet write them: nested objects and lists, big and small ints,
# any finite float, text with escapes
_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=40,
)


def _same(a: object, b: object) -> bool:
    """Equal, and of the same types all the way down (1 and 1.0 are not the same value here)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    return a == b


@settings(max_examples=300, deadline=None)
@given(_values, st.sampled_from([None, 2]), st.booleans())
def test_any_value_parses_as_the_standard_library_parses_it(value, indent, as_bytes) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    data = text.encode() if as_bytes else text
    assert _same(loads(data), json.loads(data))


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',  # duplicate keys: the last wins
        '{"x": NaN, "y": Infinity, "z": -Infinity, "w": 1e400}',
        '{"x": -0.0, "y": 5e-324, "z": 1.7976931348623157e308, "v": 1E5}',
        '{"x": "\\ud800"}',  # a lone surrogate: jiter refuses, the standard library accepts
        "[" * 300 + "]" * 300,  # deeper than jiter's limit
    ],
)
def test_edge_cases_give_the_standard_librarys_value(text: str) -> None:
    assert _same(loads(text), json.loads(text))


@pytest.mark.parametrize("text", ["[1,]", '{"x": "a\tb"}', '{"a": 1', "", "nan", '{"a": 1} x'])
def test_a_refused_text_raises_the_standard_librarys_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        loads(text)
    assert (got.value.msg, got.value.pos) == (expected.value.msg, expected.value.pos)


def test_every_captured_iperf3_output_parses_the_same() -> None:
    """The real outputs the import tests use (every iperf3 version captured or fetched)."""
    seen = 0
    for path in sorted(FIXTURES.rglob("*.json*")):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        try:
            expected = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # streams, truncated and damaged files: the error test covers refusals
        assert _same(loads(data), expected), path
        seen += 1
    assert seen >= 20, f"only {seen} JSON fixtures found under {FIXTURES}"
