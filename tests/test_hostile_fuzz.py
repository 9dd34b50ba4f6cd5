"""Hypothesis fuzzing (bounded) of what netfleet reads from others: spec YAML, and the output of
iperf3, iperf2 and sockperf on a host that may be hostile (issue 10). Each parser either returns
or raises netfleet's own error — never anything else."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netfleet.engines.iperf2_csv import parse_csv
from netfleet.engines.iperf3_live import parse_text_intervals
from netfleet.engines.iperf3_rows import result_rows
from netfleet.engines.sockperf import parse_report
from netfleet.errors import SpecError
from netfleet.spec.yamlsrc import load_yaml

FIXTURES = Path(__file__).parent / "fixtures"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

YAML_BITS = st.sampled_from(
    ["a", ":", " ", "\n", "  ", "- ", "&x ", "*x", "<<: ", "? ", "[", "]", "{", "}", ",", "!t ",
     "!!python/name:x ", "'", '"', "#", "1", "true", "on", "null", "|", ">", "---", "\t", "%"]
)  # fmt: skip


@FUZZ
@given(st.lists(YAML_BITS, max_size=60).map("".join) | st.text(max_size=200))
def test_spec_yaml_is_loaded_or_refused(tmp_path_factory: Any, text: str) -> None:
    path = tmp_path_factory.mktemp("y") / "s.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        data, lines = load_yaml(path)
    except SpecError as exc:
        assert exc.file == str(path) or str(path) in exc.message
    else:
        assert isinstance(lines, dict)
        json.dumps(data, default=str)  # plain data: no objects were built


ODD = st.sampled_from(["", "-", "1..2", ".", "nan", "1e999", "\x1b[31m", "[/]", "9" * 40, ",", " "])


def _mutations(text: str) -> st.SearchStrategy[str]:
    """The text with a slice replaced, or one of its numbers made odd (``1..2``, ``.``, …)."""
    n = len(text)
    numbers = [m.span() for m in re.finditer(r"\d+(?:\.\d+)?", text)] or [(0, 0)]
    sliced = st.tuples(st.integers(0, n), st.integers(0, 40), ODD).map(
        lambda t: text[: t[0]] + t[2] + text[t[0] + t[1] :]
    )
    number = st.tuples(st.sampled_from(numbers), ODD).map(
        lambda t: text[: t[0][0]] + t[1] + text[t[0][1] :]
    )
    return sliced | number


def _fixture_texts(folder: str, pattern: str) -> list[str]:
    return [p.read_text() for p in sorted((FIXTURES / folder).glob(pattern))][:6]


@FUZZ
@given(st.sampled_from(_fixture_texts("iperf2", "*.txt")).flatmap(_mutations))
def test_iperf2_csv_parser_never_crashes(text: str) -> None:
    for line in parse_csv(text):
        assert math.isfinite(line.start) and math.isfinite(line.end) and math.isfinite(line.bps)


@FUZZ
@given(st.sampled_from(_fixture_texts("sockperf", "*.txt")).flatmap(_mutations))
def test_sockperf_report_parser_never_crashes(text: str) -> None:
    out = parse_report(text)
    assert isinstance(out["percentiles_us"], dict)


# the strings of [0-9.]{1,6}, drawn as text: hypothesis's from_regex drew them 10× slower
NUMBERISH = st.text(alphabet="0123456789.", min_size=1, max_size=6)
SOCKPERF_LINES = [
    "sockperf: [Valid Duration] RunTime={} sec; SentMessages={}; ReceivedMessages={}",
    "sockperf: ====> avg-rtt={} (std-dev={})",
    "sockperf: # dropped messages = {}; # duplicated messages = {}; # out-of-order messages = {}",
    "sockperf: ---> percentile {} = {}",
    "sockperf: ---> <MAX> observation = {}",
    "sockperf: ---> <MIN> observation = {}",
]


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(SOCKPERF_LINES), st.lists(NUMBERISH, min_size=3))))
def test_sockperf_report_with_odd_numbers_never_crashes(lines: list[tuple[str, list[str]]]) -> None:
    """A host that prints ``RunTime=1..2`` or ``percentile . = .`` gets no traceback."""
    parse_report("\n".join(t.format(*tokens) for t, tokens in lines))


@FUZZ
@given(st.text(max_size=300), st.integers(1, 8))
def test_iperf3_text_intervals_parser_never_crashes(text: str, streams: int) -> None:
    parse_text_intervals(text, streams)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
IPERF3_KEYS = ["start", "intervals", "end", "error", "server_output_json", "server_output_text"]


@FUZZ
@given(st.dictionaries(st.sampled_from(IPERF3_KEYS), JSON, max_size=6), st.booleans())
def test_iperf3_json_rows_never_crash(result: dict[str, Any], reverse: bool) -> None:
    result_rows("run", result, {"reverse": reverse})


@FUZZ
@given(
    st.sampled_from(sorted((FIXTURES / "iperf3").glob("*.json"))).flatmap(
        lambda p: _mutations(p.read_text())
    )
)
def test_iperf3_json_from_a_mutated_real_run_never_crashes(text: str) -> None:
    try:
        doc = json.loads(text)
    except ValueError:
        return
    if isinstance(doc, dict):
        result_rows("run", doc, {})
