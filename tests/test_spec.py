"""Campaign spec validation: every bad input names the file, the field path, the line and a fix."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from netfleet.errors import ExitStatus, SpecError
from netfleet.spec import load_spec, spec_schema

GOOD = """\
campaign: c1
labels: {cloud: lab}
hosts:
  a: {kind: local, labels: {instance_type: m5.large, price_per_hour: 0.096}}
  b: {kind: netns, namespace: myns, address: 198.18.3.2}
  c: {kind: netns, lab: demo, host: server}
tests:
  - name: t
    client: a
    server: b
    params: {duration: 5, omit: 1}
    matrix: {direction: [out, in], parallel: [1, 2]}
repeats: 2
cooldown: 1.5
order: shuffled
seed: 7
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def problems(tmp_path: Path, text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, text))
    assert info.value.exit_status == ExitStatus.INVALID_INPUT
    assert str(tmp_path / "spec.yaml") in str(info.value)
    return info.value


def test_good_spec_loads(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    assert spec.campaign == "c1"
    assert spec.hosts["a"].labels["price_per_hour"] == 0.096
    assert spec.tests[0].matrix["parallel"] == [1, 2]
    assert spec.order == "shuffled"


def test_unknown_field_names_path_and_line(tmp_path: Path) -> None:
    err = problems(
        tmp_path,
        GOOD.replace("    params: {duration: 5, omit: 1}", "    params: {duration: 5, omitt: 1}"),
    )
    [(path, line, msg)] = err.problems
    assert path == "tests.0.params.omitt"
    assert line == 11
    assert "unknown field" in msg


def test_bad_value_in_matrix_is_caught_before_running(tmp_path: Path) -> None:
    err = problems(tmp_path, GOOD.replace("direction: [out, in]", "direction: [out, sideways]"))
    assert any("direction" in p and line == 12 for p, line, _ in err.problems), err.problems


def test_unknown_host_reference(tmp_path: Path) -> None:
    err = problems(tmp_path, GOOD.replace("    server: b", "    server: zz"))
    assert "'zz' is not in hosts" in str(err)


def test_netns_host_needs_address_or_lab(tmp_path: Path) -> None:
    err = problems(
        tmp_path, GOOD.replace("namespace: myns, address: 198.18.3.2", "namespace: myns")
    )
    assert "needs 'address'" in str(err)
    assert err.problems[0][0].startswith("hosts.b")


def test_local_host_must_be_loopback(tmp_path: Path) -> None:
    err = problems(tmp_path, GOOD.replace("kind: local,", "kind: local, address: 10.0.0.1,"))
    assert "loopback" in str(err)


@pytest.mark.parametrize("value", ["'a;rm -rf /'", "'$(reboot)'", "'cubic bbr'"])
def test_hostile_strings_are_refused(tmp_path: Path, value: str) -> None:
    err = problems(
        tmp_path,
        GOOD.replace(
            "params: {duration: 5, omit: 1}", f"params: {{duration: 5, congestion: {value}}}"
        ),
    )
    assert "congestion" in err.problems[0][0]


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    err = problems(tmp_path, GOOD.replace("repeats: 2", "repeats: [2"))
    assert err.problems and err.problems[0][1] is not None


def test_duplicate_key_is_refused(tmp_path: Path) -> None:
    err = problems(tmp_path, GOOD + "seed: 8\n")
    assert "appears twice" in str(err)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "nope.yaml")


def test_bad_rate_unit(tmp_path: Path) -> None:
    err = problems(
        tmp_path, GOOD.replace("omit: 1}", "omit: 1, protocol: udp, bitrate: 5furlongs}")
    )
    assert "not a rate" in str(err)


def test_schema_is_json_schema() -> None:
    schema = spec_schema()
    json.dumps(schema)
    assert "hosts" in schema["properties"] and "tests" in schema["required"]
