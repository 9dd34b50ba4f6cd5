"""netfleet.lab: lab-file validation (no privileges) and real namespaces with real iperf3 (root).

Every namespace test uses a lab with a random name and a private state directory, and a fixture
that takes the lab down (and, as a last resort, deletes ``nf-<that name>-*``) even on failure.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from netfleet.errors import InputError, LabError, SpecError
from netfleet.lab import (
    LabSpec,
    down,
    lab_schema,
    labs,
    load_lab,
    netns,
    plan,
    profiles,
    resolve_host,
    status,
    up,
)
from netfleet.lab.shaping import steady_burst, tbf_args
from netfleet.lab.state import read_state
from netfleet.units import goodput_ratio
from tests.labkit import stop, take_down, wait_listening

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (network namespaces)")
GOODPUT = goodput_ratio(1500)  # 1448/1514
PORT = 5201


# ---------------------------------------------------------------------------- helpers, fixtures


def write_lab(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> list[tuple[str, int | None, str]]:
    with pytest.raises(SpecError) as info:
        load_lab(write_lab(tmp_path, text))
    return info.value.problems


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def unique_name() -> str:
    return "t" + secrets.token_hex(3)  # 7 characters, [a-z0-9], starts with a letter


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "labs"


@pytest.fixture
def make_lab(state_dir: Path) -> Iterator[Callable[..., LabSpec]]:
    """Give a shipped profile (or a spec) a unique name; take every such lab down afterwards."""
    made: list[str] = []

    def make(profile: str | LabSpec = "steady") -> LabSpec:
        spec = load_lab(profile) if isinstance(profile, str) else profile
        spec = spec.model_copy(update={"name": unique_name()})
        made.append(spec.name)
        return spec

    yield make
    for name in made:
        take_down(name, state_dir)


@contextmanager
def iperf3_server(ns: str, port: int = PORT) -> Iterator[subprocess.Popen[Any]]:
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, "iperf3", "-s", "-1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(ns, port, proc=proc)
        yield proc
    finally:
        stop(proc)


def iperf3(sender_ns: str, receiver_ns: str, address: str, seconds: int) -> dict[str, Any]:
    """One TCP test from ``sender_ns`` to ``address`` (in ``receiver_ns``); iperf3's JSON."""
    with iperf3_server(receiver_ns):
        client = ["iperf3", "-c", address, "-p", str(PORT), "-t", str(seconds), "--json"]
        done = subprocess.run(
            ["ip", "netns", "exec", sender_ns, *client],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
            check=False,
        )
    doc: dict[str, Any] = json.loads(done.stdout)
    assert "error" not in doc, doc["error"]  # iperf3 3.12 exits 0 on many failures
    return doc


def goodput(state_dir: Path, lab: str, sender: str, receiver: str, seconds: int = 4) -> float:
    src, dst = resolve_host(lab, sender, state_dir), resolve_host(lab, receiver, state_dir)
    doc = iperf3(src.namespace, dst.namespace, str(dst.address), seconds)
    return float(doc["end"]["sum_received"]["bits_per_second"])


def steady_goodput_ratio(
    state_dir: Path, lab: str, sender: str, receiver: str, rate: float
) -> float:
    """Measured / expected goodput; one retry when a noisy machine pushes it out of 3 %."""
    ratio = goodput(state_dir, lab, sender, receiver) / (rate * GOODPUT)
    if abs(ratio - 1) > 0.03:
        ratio = goodput(state_dir, lab, sender, receiver) / (rate * GOODPUT)
    print(f"{sender}->{receiver}: measured/expected goodput = {ratio:.4f}")
    return ratio


# ------------------------------------------------------------------------------ lab file checks

GOOD = """
    name: demo
    subnet: 198.18.0.0/24
    hosts:
      a: {}
      b:
        out: {rate: 37.5mbit, peak: 500mbit, bucket: 6750mbit}
"""


def test_a_minimal_lab_resolves_addresses_in_order(tmp_path: Path) -> None:
    spec = load_lab(write_lab(tmp_path, GOOD))
    state = plan(spec)
    assert [str(h.address) for h in state.hosts.values()] == ["198.18.0.1", "198.18.0.2"]
    assert state.hosts["b"].namespace == "nf-demo-b" and state.switch == "nf-demo-sw"
    assert state.hosts["b"].out is not None and state.hosts["b"].out.rate == 37.5e6
    assert state.hosts["b"].out.bucket == 6750e6 / 8
    assert state.hosts["a"].mtu == 1500 and state.hosts["a"].cidr == "198.18.0.1/24"


def test_explicit_addresses_are_skipped_by_automatic_ones(tmp_path: Path) -> None:
    spec = load_lab(
        write_lab(
            tmp_path,
            """
            name: demo
            hosts:
              a: {}
              b: {address: 198.18.0.1}
              c: {mtu: 9001}
            """,
        )
    )
    assert {k: str(v) for k, v in spec.addresses().items()} == {
        "a": "198.18.0.2",
        "b": "198.18.0.1",
        "c": "198.18.0.3",
    }
    assert plan(spec).hosts["c"].mtu == 9001


@pytest.mark.parametrize("subnet", ["10.0.0.0/24", "198.20.0.0/24", "198.16.0.0/14"])
def test_subnet_outside_the_benchmark_range_is_refused(tmp_path: Path, subnet: str) -> None:
    found = problems(tmp_path, f"name: demo\nsubnet: {subnet}\nhosts: {{a: {{}}}}\n")
    assert [(p, line) for p, line, _ in found] == [("subnet", 2)]
    assert "198.18.0.0/15" in found[0][2]


def test_subnet_with_host_bits_says_how_to_write_it(tmp_path: Path) -> None:
    found = problems(tmp_path, "name: demo\nsubnet: 198.18.0.5/24\nhosts: {a: {}}\n")
    assert found[0][0] == "subnet" and "198.18.0.0/24" in found[0][2]


def test_peak_below_rate_is_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        name: demo
        hosts:
          a:
            out: {rate: 500mbit, peak: 100mbit, bucket: 100mb}
        """,
    )
    assert found[0][:2] == ("hosts.a.out", 4)
    assert "must be above rate" in found[0][2]


def test_bucket_needs_peak_and_peak_needs_bucket(tmp_path: Path) -> None:
    for shaper in ("{rate: 50mbit, bucket: 100mb}", "{rate: 50mbit, peak: 100mbit}"):
        found = problems(tmp_path, f"name: demo\nhosts:\n  a:\n    in: {shaper}\n")
        assert found[0][0] == "hosts.a.in" and "both 'peak' and 'bucket'" in found[0][2]


def test_a_bucket_tbf_cannot_hold_is_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path, "name: demo\nhosts:\n  a:\n    out: {rate: 10mbit, peak: 1gbit, bucket: 3gb}\n"
    )
    assert "tbf's limit" in found[0][2]


def test_unknown_field_names_its_line(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        name: demo
        hosts:
          a:
            labels: {cloud: aws}
            out: {rate: 1gbit, burts: 10mb}
          b:
            inn: {rate: 1gbit}
        """,
    )
    assert sorted((p, line) for p, line, _ in found) == [
        ("hosts.a.out.burts", 5),
        ("hosts.b.inn", 7),
    ]
    assert all("unknown field" in what for _, _, what in found)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("name: Demo_1\nhosts: {a: {}}\n", "name"),
        ("name: averyveryverylongname\nhosts: {a: {}}\n", "name"),
        ("name: demo\nhosts: {Big: {}}\n", "hosts"),
        ("name: demo\nhosts: {sw: {}}\n", "hosts"),
        ("name: demo\nhosts: {}\n", "hosts"),
        ("name: demo\nmtu: 100000\nhosts: {a: {}}\n", "mtu"),
        ("name: demo\nhosts: {a: {out: {rate: fast}}}\n", "hosts.a.out.rate"),
    ],
)
def test_bad_names_and_values_are_refused(tmp_path: Path, text: str, path: str) -> None:
    found = problems(tmp_path, text)
    assert found[0][0] == path, found


def test_addresses_must_be_in_the_subnet_and_distinct(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        name: demo
        subnet: 198.18.0.0/28
        hosts:
          a: {address: 198.18.1.1}
          b: {address: 198.18.0.5}
          c: {address: 198.18.0.5}
          d: {address: 198.18.0.15}
        """,
    )
    assert [(p, line) for p, line, _ in found] == [
        ("hosts.a.address", 4),
        ("hosts.c.address", 6),
        ("hosts.d.address", 7),
    ]
    assert "outside the subnet" in found[0][2] and "already b's" in found[1][2]


def test_every_shipped_profile_loads() -> None:
    assert {"demo", "r4", "fargate", "steady"} <= set(profiles())
    for name in profiles():
        spec = load_lab(name)
        assert spec.name == name and plan(spec).hosts


def test_r4_profile_follows_seed_004_at_one_twentieth() -> None:
    hosts = load_lab("r4").hosts
    large = hosts["r4-large"].out
    assert large is not None and large.peak == 500e6 and large.rate == 37.5e6
    assert large.burst_seconds == pytest.approx(6750 / 462.5)  # 14.6 s
    assert hosts["r4-4xlarge"].in_ is not None and hosts["r4-4xlarge"].in_.rate == 250e6
    assert not hosts["server"].out and not hosts["server"].in_


def test_fargate_profile_is_asymmetric_and_fits_the_machine() -> None:
    spec = load_lab("fargate")
    rates = [s.rate for h in spec.hosts.values() for s in (h.out, h.in_) if s is not None]
    assert max(rates) == pytest.approx(3404e6 * 0.2) and max(rates) <= 700e6
    tier = spec.hosts["f2048-4g"]
    assert tier.labels["instance_type"] == "fargate-2048-4096" and tier.labels["cpu_units"] == 2048
    assert tier.out is not None and tier.in_ is not None and tier.out.rate > tier.in_.rate


def test_unknown_profile_lists_the_shipped_ones() -> None:
    with pytest.raises(SpecError) as info:
        load_lab("nosuchlab")
    assert info.value.hint is not None and "demo" in info.value.hint


def test_tbf_arguments() -> None:
    spec = load_lab("demo")
    steady, burst = spec.hosts["steady"].out, spec.hosts["burst"].out
    assert steady is not None and burst is not None
    assert tbf_args(steady) == ["tbf", "rate", "300000000bit", "burst", "750000",
                                "latency", "100ms"]  # fmt: skip
    assert tbf_args(burst) == [
        "tbf", "rate", "50000000bit", "burst", "262500000",
        "peakrate", "400000000bit", "mtu", "65536", "latency", "100ms",
    ]  # fmt: skip
    assert steady_burst(10e9) == 25_000_000 and steady_burst(50e6) == 131072


def test_lab_schema_uses_yaml_field_names_and_accepts_units() -> None:
    schema = lab_schema()
    assert set(schema["$defs"]["HostSpec"]["properties"]) == {
        "labels",
        "mtu",
        "address",
        "out",
        "in",
        "flow_cap",
        "link",
    }
    rate_types = {t["type"] for t in schema["$defs"]["Shaper"]["properties"]["rate"]["anyOf"]}
    assert rate_types == {"number", "string"}


def test_state_dir_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETFLEET_STATE_DIR", str(tmp_path))
    (tmp_path / "abc.json").write_text("{}")
    assert labs() == ["abc"]
    assert labs(tmp_path / "elsewhere") == []


def test_down_of_a_lab_that_is_not_up_is_a_no_op(state_dir: Path) -> None:
    assert down("nothere", state_dir) == []


def test_bad_lab_names_never_become_paths(state_dir: Path) -> None:
    with pytest.raises(InputError):
        down("../../etc", state_dir)


def test_resolve_host_says_how_to_bring_the_lab_up(state_dir: Path) -> None:
    with pytest.raises(LabError) as info:
        resolve_host("nothere", "a", state_dir)
    assert "netfleet lab up nothere" in str(info.value)


def test_not_root_is_refused_with_a_hint(monkeypatch: pytest.MonkeyPatch, state_dir: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(LabError) as info:
        up(load_lab("steady"), state_dir)
    assert info.value.hint == "run as root (sudo)"
    assert not state_dir.exists()


# ----------------------------------------------------------------------------- real namespaces


@pytest.mark.netns
@needs_root
def test_up_status_down_leaves_nothing(make_lab: Callable[..., LabSpec], state_dir: Path) -> None:
    spec = make_lab("demo")
    state = up(spec, state_dir)
    ours = {f"nf-{spec.name}-{n}" for n in ("sw", "server", "steady", "burst", "asym")}
    assert ours <= netns_names()
    assert set(state.namespaces) == ours and labs(state_dir) == [spec.name]

    [lab] = status(spec.name, state_dir)
    assert lab.healthy and {h.host.name for h in lab.hosts} == {"server", "steady", "burst", "asym"}
    by_name = {h.host.name: h for h in lab.hosts}
    assert by_name["asym"].out_qdisc is not None and by_name["asym"].out_qdisc.kind == "tbf"
    assert by_name["asym"].in_qdisc is not None
    assert by_name["asym"].in_qdisc.options["rate"] == 150e6 / 8  # tc reports bytes/s
    assert by_name["burst"].out_qdisc is not None
    assert by_name["burst"].out_qdisc.options["burst"] == pytest.approx(2100e6 / 8, abs=10)
    assert by_name["server"].out_qdisc is not None and by_name["server"].out_qdisc.kind != "tbf"
    assert by_name["server"].shaping == "unshaped" and by_name["server"].exists
    assert by_name["asym"].shaping.startswith("out: steady 400.00 Mbit/s [sent ")
    assert "in: steady 150.00 Mbit/s" in by_name["asym"].shaping

    host = resolve_host(spec.name, "steady", state_dir)
    assert (host.namespace, host.interface, host.address) == (
        f"nf-{spec.name}-steady",
        "eth0",
        "198.18.0.2",
    )
    link = json.loads(
        subprocess.run(
            ["ip", "-n", host.namespace, "-j", "-d", "address", "show", "dev", "eth0"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )[0]
    assert link["mtu"] == 1500
    assert [a["family"] for a in link["addr_info"]] == ["inet"]  # IPv6 is off: no link-local
    ping = ["ip", "netns", "exec", host.namespace, "ping", "-c", "1", "-W", "2", "198.18.0.1"]
    assert subprocess.run(ping, capture_output=True, check=False).returncode == 0

    sleeper = subprocess.Popen(["ip", "netns", "exec", host.namespace, "sleep", "60"])
    try:
        deadline = time.monotonic() + 5
        while status(spec.name, state_dir)[0].hosts[1].processes < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with pytest.raises(LabError, match="already up"):
            up(spec, state_dir)

        removed = down(spec.name, state_dir)
        assert sleeper.wait(timeout=5) == -signal.SIGTERM  # killed by PID before the delete
    finally:
        stop(sleeper)
    assert set(removed) == ours
    assert not any(ns.startswith(f"nf-{spec.name}-") for ns in netns_names())
    assert labs(state_dir) == [] and down(spec.name, state_dir) == []


@pytest.mark.netns
@needs_root
def test_down_never_deletes_a_namespace_it_did_not_record(
    make_lab: Callable[..., LabSpec], state_dir: Path
) -> None:
    spec = make_lab()
    foreign = f"nf-{spec.name}-x"
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    try:
        up(spec, state_dir)
        assert foreign not in down(spec.name, state_dir)
        assert foreign in netns_names()
    finally:
        subprocess.run(["ip", "netns", "delete", foreign], check=False)


@pytest.mark.netns
@needs_root
def test_down_leaves_a_same_named_namespace_that_replaced_ours(
    make_lab: Callable[..., LabSpec], state_dir: Path
) -> None:
    spec = make_lab()
    up(spec, state_dir)
    impostor = f"nf-{spec.name}-client"
    state = read_state(spec.name, state_dir)
    assert state is not None
    ours = state.inodes[impostor]
    ino = ours if isinstance(ours, int) else int(ours.split(":")[0])
    for _ in range(50):  # the kernel gives our freed inode number to a namespace made next
        subprocess.run(["ip", "netns", "delete", impostor], check=True)
        subprocess.run(["ip", "netns", "add", impostor], check=True)
        if os.stat(f"/run/netns/{impostor}").st_ino == ino:
            break  # (most often within a few tries; a namespace another test made may take it)
        time.sleep(0.1)
    try:
        removed = down(spec.name, state_dir)
        assert impostor not in removed and impostor in netns_names()
        assert f"nf-{spec.name}-sw" in removed
    finally:
        subprocess.run(["ip", "netns", "delete", impostor], check=False)


@pytest.mark.netns
@needs_root
def test_a_namespace_s_identity_is_its_inode_and_when_it_was_made() -> None:
    name = f"nf-id{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        st = os.stat(f"/run/netns/{name}")
        assert netns.identity(name) == f"{st.st_ino}:{st.st_ctime_ns}"
        assert netns.matches(netns.identity(name) or "", name)
        # the same inode number, made at another time: a namespace made after ours was deleted
        assert not netns.matches(f"{st.st_ino}:{st.st_ctime_ns - 1}", name)
        assert netns.matches(st.st_ino, name)  # a state from before 0.2: the number alone
        assert not netns.in_namespace(os.getpid(), netns.identity(name) or "")  # we are not in it
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)
    assert netns.identity(name) is None and not netns.matches(st.st_ino, name)


@pytest.mark.netns
@needs_root
def test_up_refuses_a_namespace_name_that_is_taken(
    make_lab: Callable[..., LabSpec], state_dir: Path
) -> None:
    spec = make_lab()
    taken = f"nf-{spec.name}-client"
    subprocess.run(["ip", "netns", "add", taken], check=True)
    try:
        with pytest.raises(LabError) as info:
            up(spec, state_dir)
        assert taken in str(info.value) and info.value.hint and "ip netns delete" in info.value.hint
        assert taken in netns_names() and f"nf-{spec.name}-sw" not in netns_names()
        assert labs(state_dir) == []
    finally:
        subprocess.run(["ip", "netns", "delete", taken], check=False)


@pytest.mark.netns
@needs_root
def test_a_failure_midway_tears_down_what_up_made(
    make_lab: Callable[..., LabSpec], state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet.lab import topology

    def broken_tc(*args: str, ns: str | None = None) -> str:
        raise LabError("tc exploded")

    monkeypatch.setattr(topology, "tc", broken_tc)
    spec = make_lab()
    with pytest.raises(LabError, match="tc exploded"):
        up(spec, state_dir)
    assert not any(ns.startswith(f"nf-{spec.name}-") for ns in netns_names())
    assert labs(state_dir) == []


CRASH = """
import os, sys
from netfleet.lab import load_lab, netns, topology
name, state_dir, where = sys.argv[1:]
spec = load_lab("steady").model_copy(update={"name": name})
if where == "mid-host":      # namespaces and a veth exist, no shaper yet
    topology.tc = lambda *a, **k: os._exit(9)
else:                        # the second namespace is recorded but not yet created
    calls = []
    real_add = netns.add
    def add(ns):
        calls.append(ns)
        if len(calls) == 2:
            os._exit(9)
        real_add(ns)
    netns.add = add
topology.up(spec, state_dir)
"""


@pytest.mark.netns
@needs_root
@pytest.mark.parametrize("where", ["mid-host", "recorded-not-created"])
def test_down_cleans_up_after_a_crash_during_up(
    make_lab: Callable[..., LabSpec], state_dir: Path, where: str
) -> None:
    spec = make_lab()
    crashed = subprocess.run(
        [sys.executable, "-c", CRASH, spec.name, str(state_dir), where], check=False, timeout=60
    )
    assert crashed.returncode == 9  # died without any chance to clean up
    assert labs(state_dir) == [spec.name]
    state_file = json.loads((state_dir / f"{spec.name}.json").read_text())
    assert state_file["complete"] is False
    assert state_file["namespaces"] == [f"nf-{spec.name}-sw", f"nf-{spec.name}-server"]
    with pytest.raises(LabError, match="broken"):
        resolve_host(spec.name, "server", state_dir)
    with pytest.raises(LabError, match="interrupted"):
        up(spec, state_dir)
    [lab] = status(spec.name, state_dir)
    assert not lab.healthy

    removed = down(spec.name, state_dir)
    expected = {f"nf-{spec.name}-sw"}
    if where == "mid-host":
        expected.add(f"nf-{spec.name}-server")
    assert set(removed) == expected
    assert not any(ns.startswith(f"nf-{spec.name}-") for ns in netns_names())
    assert labs(state_dir) == []


@pytest.mark.netns
@needs_root
def test_steady_shaper_gives_rate_times_1448_over_1514_and_in_differs_from_out(
    make_lab: Callable[..., LabSpec], state_dir: Path
) -> None:
    spec = make_lab("steady")  # client: out 300mbit, in 150mbit; server: 1gbit both ways
    up(spec, state_dir)
    out_ratio = steady_goodput_ratio(state_dir, spec.name, "client", "server", 300e6)
    in_ratio = steady_goodput_ratio(state_dir, spec.name, "server", "client", 150e6)
    assert out_ratio == pytest.approx(1, abs=0.03)
    assert in_ratio == pytest.approx(1, abs=0.03)
    [lab] = status(spec.name, state_dir)
    client = next(h for h in lab.hosts if h.host.name == "client")
    assert client.out_qdisc is not None and client.out_qdisc.sent_bytes > 300e6 / 8 * 3
    assert client.in_qdisc is not None and client.in_qdisc.sent_bytes > 150e6 / 8 * 3


@pytest.mark.netns
@needs_root
def test_credit_shaper_bursts_at_peak_then_falls_to_baseline(
    make_lab: Callable[..., LabSpec], state_dir: Path, tmp_path: Path
) -> None:
    # 1 s of credit at 200mbit, then 20mbit: bucket = (200 - 20) Mbit/s x 1 s = 180 Mbit
    spec = make_lab(
        load_lab(
            write_lab(
                tmp_path,
                """
                name: credit
                hosts:
                  server: {}
                  burst:
                    out: {rate: 20mbit, peak: 200mbit, bucket: 180mbit}
                """,
            )
        )
    )
    up(spec, state_dir)
    src = resolve_host(spec.name, "burst", state_dir)
    dst = resolve_host(spec.name, "server", state_dir)
    doc = iperf3(src.namespace, dst.namespace, str(dst.address), seconds=4)
    received = doc["end"]["sum_received"]
    expected = (180e6 + 20e6 * received["seconds"]) / 8 * GOODPUT  # A(t) = sigma + rho t
    print(f"credit: received/expected bytes = {received['bytes'] / expected:.4f}")
    assert received["bytes"] == pytest.approx(expected, rel=0.06)
    # baseline once the bucket is empty (from ~1 s): the last two seconds, both past it. Their
    # mean, as one second's sender-side count moves by a few Mbit/s when a loaded machine delays
    # the writes around its edge (seen: 26.5 Mbit/s in the last of 3 s, with 4 workers at load 8)
    last = [i["sum"]["bits_per_second"] for i in doc["intervals"][-2:]]
    assert sum(last) / 2 == pytest.approx(20e6 * GOODPUT, rel=0.25), last
