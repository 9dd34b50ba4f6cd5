"""The spec loader's limits and YAML 1.2 reading (issue 10): what is accepted, what is refused
and where the error points."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from netfleet.errors import SpecError
from netfleet.keymaterial import looks_like_key_material, looks_like_secret_name
from netfleet.spec import load_spec
from netfleet.spec.yamlsrc import load_yaml

SPEC = """\
campaign: c
hosts:
  a: {kind: local, address: 127.0.0.1}
  b: {kind: local, address: 127.0.0.2}
tests:
  - name: t
    engine: iperf3
    client: a
    server: b
    params: {duration: 1}
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def test_the_documented_retry_on_is_a_key(tmp_path: Path) -> None:
    spec = load_spec(
        _write(tmp_path, SPEC + "retry: {on: [failed, interrupted], max_attempts: 3}\n")
    )
    assert spec.retry.max_attempts == 3
    assert set(spec.retry.on) == {"failed", "interrupted"}


def test_yaml_12_booleans_and_keys_as_written(tmp_path: Path) -> None:
    data, _ = load_yaml(_write(tmp_path, "a: yes\nb: on\nc: true\nd: FALSE\n1: x\ntrue: y\n"))
    assert data == {"a": "yes", "b": "on", "c": True, "d": False, "1": "x", "true": "y"}


def test_merge_keys_are_supported(tmp_path: Path) -> None:
    text = "base: &b {x: 1, y: 2}\nother: &o {y: 9, z: 3}\nm: {<<: [*b, *o], x: 0}\n"
    data, _ = load_yaml(_write(tmp_path, text))
    assert data["m"] == {"x": 0, "y": 2, "z": 3}


def test_aliases_within_bounds_work(tmp_path: Path) -> None:
    data, _ = load_yaml(_write(tmp_path, "a: &x [1, 2]\nb: *x\nc: [*x, *x]\n"))
    assert data["c"] == [[1, 2], [1, 2]]


def test_an_alias_bomb_is_refused_fast(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    t0 = time.monotonic()
    with pytest.raises(SpecError, match="aliases are expanded"):
        load_yaml(_write(tmp_path, "\n".join(lines) + "\n"))
    assert time.monotonic() - t0 < 2


@pytest.mark.parametrize(
    ("extra", "line", "words"),
    [
        ("  - {name: t, engine: iperf3, client: a, server: b}\n", 11, "used twice"),
        ("  - {name: u, engine: iperf3, client: a, server: zz}\n", 11, "'zz' is not in hosts"),
        ("  - name: u\n    engine: iperf3\n    client: zz\n    server: b\n", 13, "'zz'"),
    ],
)
def test_cross_reference_errors_point_at_their_line(
    tmp_path: Path, extra: str, line: int, words: str
) -> None:
    p = _write(tmp_path, SPEC + extra)
    with pytest.raises(SpecError) as err:
        load_spec(p)
    assert f"{p}:{line}:" in str(err.value) and words in str(err.value)


def test_the_matrix_cap_names_the_size_and_can_be_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = ", ".join(str(i) for i in range(1, 101))
    text = SPEC.replace(
        "    server: b\n",
        f"    server: b\n    matrix: {{duration: [{values}], parallel: [1, 2]}}\n",
    )
    p = _write(tmp_path, text)
    monkeypatch.setenv("NETFLEET_MAX_COMBINATIONS", "150")
    with pytest.raises(SpecError, match=r"100 duration × 2 parallel = 200 combinations"):
        load_spec(p)
    monkeypatch.setenv("NETFLEET_MAX_COMBINATIONS", "200")
    assert len(load_spec(p).tests[0].matrix["duration"]) == 100


def test_the_size_limit_is_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _write(tmp_path, SPEC + "# " + "x" * 2000 + "\n")
    monkeypatch.setenv("NETFLEET_MAX_SPEC_BYTES", "1000")
    with pytest.raises(SpecError, match="larger than 1,000 bytes"):
        load_yaml(p)
    monkeypatch.setenv("NETFLEET_MAX_SPEC_BYTES", "100000")
    load_yaml(p)


@pytest.mark.parametrize(
    "value",
    [
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==",
        "-----begin rsa private key-----",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none",
        "QUFB" * 100,
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA",
    ],
)
def test_key_material_is_recognised_and_never_echoed(tmp_path: Path, value: str) -> None:
    assert looks_like_key_material(value)
    quoted = value.replace("\n", "\\n")
    text = SPEC.replace(
        "tests:", f'  c: {{kind: ssh, address: 198.18.0.9, key: "{quoted}"}}\ntests:'
    )
    with pytest.raises(SpecError) as err:
        load_spec(_write(tmp_path, text))
    assert "key material" in str(err.value)
    assert value.splitlines()[0][8:] not in str(err.value)


@pytest.mark.parametrize("path", ["~/.ssh/id_ed25519", "keys/lab_rsa", "/root/.ssh/" + "a" * 200])
def test_key_paths_are_not_key_material(path: str) -> None:
    assert not looks_like_key_material(path)


@pytest.mark.parametrize(
    ("name", "secret"),
    [("password", True), ("db.token", True), ("API_KEY", True), ("aws_secret", True),
     ("instance_type", False), ("keyboard", False), ("tokens_per_s", False)],
)  # fmt: skip
def test_secret_label_names(tmp_path: Path, name: str, secret: bool) -> None:
    assert looks_like_secret_name(name) is secret
    text = SPEC + f"labels: {{{name}: hunter2}}\n"
    if secret:
        with pytest.raises(SpecError, match="looks like a secret"):
            load_spec(_write(tmp_path, text))
        return
    assert load_spec(_write(tmp_path, text)).labels[name] == "hunter2"
