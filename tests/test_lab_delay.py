"""Lab links with delay, jitter and loss: the lab file's ``link:`` and the delay line
(native/delayline) in real namespaces, measured with real irtt and ping.

The namespace tests share one lab (random name, private state directory) that is always taken
down; its hosts: ``server`` (a veth), ``near`` (a delay line adding nothing: the lab's own round
trip through the same kind of link), ``far`` (30 ms each way), ``lossy`` (50 % loss out) and
``jittery`` (10 ms ± 4 ms out).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import statistics
import subprocess
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from netfleet.children import start_ticks
from netfleet.engines.params.ping import PingParams
from netfleet.engines.ping import Ping, summarize
from netfleet.errors import LabError, SpecError
from netfleet.lab import LabState, down, lab_schema, load_lab, resolve_host, status, up
from netfleet.lab import delayline as dl
from netfleet.lab.state import Process, read_state
from tests.labkit import stop, take_down, wait_listening

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (network namespaces)")
pytestmark = pytest.mark.solo  # times the lab's links to tens of µs: alone, after the rest
IRTT_PORT = 2112
# tries of a timed sample, the first that lands counting: a busy spell of this VM (the host's,
# not the suite's: the solo phase runs alone) kept all of five 3 s samples 90-280 µs high once
# (CI, 2026-11-29), and the next run passed; all of eight 400-530 µs high (the lab's own round
# trip, `near`, 410-530 µs: ten times an idle machine's) in 40 s once (CI, 2026-11-30). After a
# try whose `near` says the machine is busy, the next waits BUSY_PAUSE s for the spell to pass
ATTEMPTS = 8
BUSY_NEAR = 150e-6
BUSY_PAUSE = 8.0
# The measuring tools (irtt, ping) run at the highest CFS weight (nice -20): on a busy machine a
# tool at normal priority waits its turn for a CPU, milliseconds at times (irtt's median 3-8 ms
# high with three busy loops on two cores), and that wait is the machine's, not the link's.
# Not real-time (chrt): irtt is a Go program, and Go's runtime spinning at SCHED_FIFO starved
# the other worker's iperf3 and hung irtt itself (seen in the suite). The module runs in the
# suite's solo phase (scripts/test.sh), with nothing else of the suite's beside it.
MEASURE = ["nice", "-n", "-20"]


def write_lab(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# ------------------------------------------------------------------------- the lab file (no root)


def test_schema_shows_delay_jitter_and_loss_per_direction() -> None:
    defs = lab_schema()["$defs"]
    assert "link" in defs["HostSpec"]["properties"]
    assert set(defs["Link"]["properties"]) == {"out", "in"}
    assert set(defs["Impairment"]["properties"]) == {"delay", "jitter", "loss"}


def test_cli_schema_lab_shows_them() -> None:
    exe = Path(os.environ.get("VIRTUAL_ENV", ".venv")) / "bin" / "netfleet"
    exe = exe if exe.exists() else Path(".venv/bin/netfleet")
    out = subprocess.run([str(exe), "schema", "--lab"], capture_output=True, text=True, check=True)
    impairment = json.loads(out.stdout)["$defs"]["Impairment"]["properties"]
    assert {"delay", "jitter", "loss"} <= set(impairment)


def test_link_values_are_parsed_with_units(tmp_path: Path) -> None:
    link_text = "{out: {delay: 30ms, jitter: 650us, loss: 0.1%}, in: {delay: 1.5s}}"
    spec = load_lab(write_lab(tmp_path, f"name: d\nhosts:\n  a: {{link: {link_text}}}\n"))
    link = spec.hosts["a"].link
    assert link is not None
    assert (link.out.delay, link.out.jitter, link.out.loss) == (0.03, 0.00065, 0.001)
    assert link.in_.delay == 1.5 and link.in_.loss == 0.0


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ("{out: {delay: 30}}", "hosts.a.link.out.delay", "no unit"),
        ("{out: {delay: 1ms, jitter: 2ms}}", "hosts.a.link.out", "exceeds delay"),
        ("{in: {loss: 0.5}}", "hosts.a.link.in.loss", "percentage"),
        ("{in: {delay: 3s}}", "hosts.a.link.in.delay", "too long"),
        ("{up: {delay: 1ms}}", "hosts.a.link.up", "unknown field"),
    ],
)
def test_bad_link_values_name_the_field_and_the_fix(
    tmp_path: Path, body: str, field: str, words: str
) -> None:
    path = write_lab(tmp_path, f"name: d\nhosts:\n  a: {{link: {body}}}\n")
    with pytest.raises(SpecError) as info:
        load_lab(path)
    where = [(f, msg) for f, _line, msg in info.value.problems]
    assert any(f == field and words in msg for f, msg in where), where


# ------------------------------------------------------------------- real namespaces (root)


@pytest.fixture(scope="module")
def delay_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    if not IS_ROOT:
        pytest.skip("needs root (network namespaces)")
    if not os.access(dl.REPO_BINARY, os.X_OK):  # the bootstrap builds it; so does this
        subprocess.run(["make", "-s", "-C", str(dl.REPO_BINARY.parent)], check=True)
    tmp = tmp_path_factory.mktemp("delaylab")
    name = "d" + secrets.token_hex(3)
    path = tmp / "lab.yaml"
    path.write_text(
        f"name: {name}\n"
        + textwrap.dedent(
            """
            subnet: 198.18.91.0/24
            hosts:
              server: {}
              near: {link: {}}
              far: {link: {out: {delay: 30ms}, in: {delay: 30ms}}}
              lossy: {link: {out: {loss: 50%}}}
              jittery: {link: {out: {delay: 10ms, jitter: 4ms}}}
            """
        )
    )
    state = tmp / "labs"
    try:
        up(load_lab(path), state_dir=state)
        yield name, state
    finally:
        take_down(name, state)


def machine_cpu() -> tuple[int, int]:
    """(all, steal) CPU ticks since boot, from /proc/stat's first line."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(ticks[:8]), ticks[7]


def irtt_median(client_ns: str, server: str, seconds: float = 3.0) -> float:
    """irtt's median RTT in seconds: a probe every 3 ms for ``seconds``."""
    out = subprocess.run(
        [*MEASURE, "ip", "netns", "exec", client_ns, "irtt", "client", "-Q", "-o", "-", "-i", "3ms",
         "-d", f"{seconds}s", f"{server}:{IRTT_PORT}"],
        capture_output=True, text=True, timeout=seconds + 20, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return float(json.loads(out.stdout)["stats"]["rtt"]["median"]) / 1e9


@pytest.mark.netns
@needs_root
def test_thirty_ms_each_way_gives_irtt_a_sixty_ms_round_trip(delay_lab: tuple[str, Path]) -> None:
    name, state = delay_lab
    server = resolve_host(name, "server", state)
    hosts = [resolve_host(name, h, state) for h in ("near", "far")]
    servers = []
    for h in hosts:
        where = f"{h.address}:{IRTT_PORT}"
        irtt = ["irtt", "server", "-i", "0", "-b", where]
        argv = [*MEASURE, "ip", "netns", "exec", h.namespace, *irtt]
        servers.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_listening(h.namespace, IRTT_PORT, udp=True, proc=servers[-1])
    tries: list[tuple[float, float]] = []
    cpu_before = machine_cpu()
    try:
        # both at once, so both see the same machine: `near` crosses the same kind of link
        # (TAPs + delay line) with no delay, i.e. the lab's own round trip (~20-40 µs on an idle
        # machine, a few hundred on a busy one). A busy shared machine can spoil one 3 s sample
        # by more than 50 µs either way: up to ATTEMPTS tries, the first that lands counts
        for _ in range(ATTEMPTS):
            if tries and tries[-1][0] > BUSY_NEAR:
                time.sleep(BUSY_PAUSE)
            with ThreadPoolExecutor(2) as pool:
                near, far = pool.map(lambda h: irtt_median(server.namespace, h.address), hosts)
            tries.append((near, far))
            if abs(far - near - 0.060) <= 50e-6:
                break
        lab_state = read_state(name, state)
        far_line = dl.counters(lab_state, hosts[1], state) if lab_state else {}
    finally:
        for p in servers:
            stop(p)
    cpu_after = machine_cpu()
    steal = (cpu_after[1] - cpu_before[1]) / max(1, cpu_after[0] - cpu_before[0])
    shown = [f"far {f * 1e3:.4f} ms, near {n * 1e6:.0f} µs" for n, f in tries]
    machine = (
        f"the machine over the tries: {steal:.1%} of its CPU time stolen by the hypervisor, "
        f"load {os.getloadavg()[0]:.2f}; the far line's releases: {far_line}"
    )
    near, far = tries[-1]
    assert abs(far - near - 0.060) <= 50e-6, (shown, machine)
    assert far >= 0.060, shown  # never shorter than configured


def ping(ns: str, address: str, count: int, interval: float) -> str:
    """ping's output (each reply's line and the summary)."""
    argv = ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", "1", address]
    return subprocess.run(
        [*MEASURE, "ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=30
    ).stdout


@pytest.mark.netns
@needs_root
def test_loss_drops_that_share_of_packets(delay_lab: tuple[str, Path]) -> None:
    name, state = delay_lab
    server, lossy = resolve_host(name, "server", state), resolve_host(name, "lossy", state)
    out = ping(lossy.namespace, server.address, count=400, interval=0.002)
    received = int(out.split(" received")[0].rsplit(",", 1)[1])
    # 50 % of echo requests lost on the way out (replies come back whole): 200 ± 3 sd (30)
    assert 140 <= received <= 260, out
    lab_state = _state(name, state)
    counters = dl.counters(lab_state, lab_state.hosts["lossy"], state)
    assert counters["out"]["lost"] >= 140 and counters["in"]["lost"] == 0


@pytest.mark.netns
@needs_root
def test_jitter_spreads_the_delay_within_its_bounds(delay_lab: tuple[str, Path]) -> None:
    name, state = delay_lab
    server, jittery = resolve_host(name, "server", state), resolve_host(name, "jittery", state)
    out = ping(server.namespace, jittery.address, count=150, interval=0.01)
    rtts = sorted(float(t) for t in re.findall(r"time=([\d.]+) ms", out))
    assert len(rtts) >= 140, out
    low, high = rtts[len(rtts) // 20], rtts[-len(rtts) // 20]  # 5th and 95th percentiles
    # replies leave after 10 ms ± 4 ms, uniform (plus the lab's own round trip)
    assert 6.0 <= low < 7.5 and 12.5 < high <= 14.8, (low, high)
    assert statistics.pstdev(rtts) > 1.5  # uniform ±4 ms: 2.3 ms


def _state(name: str, state: Path) -> LabState:
    found = read_state(name, state)
    assert found is not None
    return found


@pytest.mark.netns
@needs_root
def test_a_recorded_pid_that_is_not_our_delay_line_is_left_alone(
    delay_lab: tuple[str, Path],
) -> None:
    name, state_dir = delay_lab
    state = _state(name, state_dir)
    host = state.hosts["far"]
    assert host.delayline is not None and dl.is_ours(state, host.delayline)
    other = subprocess.Popen(["sleep", "30"])
    try:
        ticks = start_ticks(other.pid)
        assert ticks is not None
        # a state file naming someone else's process (right PID and start time)
        fake = host.model_copy(update={"delayline": Process(pid=other.pid, start_ticks=ticks)})
        assert not dl.is_ours(state, Process(pid=other.pid, start_ticks=ticks))
        dl.stop(state, fake)
        assert other.poll() is None  # still running
        # our own, with a start time that does not match (a reused PID): also left alone
        assert not dl.is_ours(
            state, Process(pid=host.delayline.pid, start_ticks=host.delayline.start_ticks + 1)
        )
    finally:
        stop(other)


@pytest.mark.netns
@needs_root
def one_link_lab(tmp_path: Path) -> tuple[str, Path]:
    name = "d" + secrets.token_hex(3)
    text = f"name: {name}\nsubnet: 198.18.92.0/29\nhosts:\n  a: {{link: {{}}}}\n"
    return name, write_lab(tmp_path, text)


@pytest.mark.netns
@needs_root
def test_without_a_built_delay_line_up_says_how_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(dl.BINARY_ENV, str(tmp_path / "missing" / "delayline"))
    name, path = one_link_lab(tmp_path)
    with pytest.raises(LabError) as info:
        up(load_lab(path), state_dir=tmp_path / "labs")
    assert "not built" in str(info.value) and "make -C" in (info.value.hint or "")
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"nf-{name}-" not in left
    assert read_state(name, tmp_path / "labs") is None


def test_down_stops_the_delay_lines_and_removes_their_devices(tmp_path: Path) -> None:
    if not os.access(dl.REPO_BINARY, os.X_OK):
        subprocess.run(["make", "-s", "-C", str(dl.REPO_BINARY.parent)], check=True)
    name, path = one_link_lab(tmp_path)
    state_dir = tmp_path / "labs"
    state = up(load_lab(path), state_dir=state_dir)
    try:
        proc = state.hosts["a"].delayline
        assert proc is not None and dl.is_ours(state, proc)
        log = dl.log_path(state, state.hosts["a"], state_dir)
        assert log.exists()
        [lab_status] = status(name, state_dir)
        assert lab_status.healthy and lab_status.hosts[0].delay_line is True
        os.kill(proc.pid, signal.SIGKILL)  # the line dies: its link is down
        deadline = time.monotonic() + 5
        while dl.is_ours(state, proc) and time.monotonic() < deadline:
            time.sleep(0.05)
        [lab_status] = status(name, state_dir)
        assert not lab_status.healthy and lab_status.hosts[0].delay_line is False
        assert "NOT RUNNING" in lab_status.hosts[0].shaping
    finally:
        removed = down(name, state_dir=state_dir)
    assert f"nf-{name}-a" in removed
    assert not Path(f"/proc/{proc.pid}").exists() or start_ticks(proc.pid) != proc.start_ticks
    assert not log.exists()
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert "to-a " not in links  # nothing moved to the root namespace


@pytest.mark.parametrize("text", ["23us", "0.5us", "35ms", "1.999s"])
def test_a_delay_reads_back_from_the_state_file_unchanged(text: str) -> None:
    from netfleet.lab.models import Link

    link = Link.model_validate({"out": {"delay": text, "loss": "0.001%"}, "in": {"jitter": 0}})
    assert Link.model_validate_json(link.model_dump_json(by_alias=True)) == link


@pytest.mark.netns
@needs_root
def test_the_ping_engine_counts_no_loss_for_requests_in_flight_at_its_end(
    delay_lab: tuple[str, Path],
) -> None:
    """The ping engine's own argv (``-c`` with a ``-w`` deadline) on a 60 ms round trip at
    50 ms intervals: ping exits on its 20th reply with one or two requests still in flight and
    reports them lost; netfleet counts them apart (nothing was lost) — and a lossy link's loss
    is still its loss."""
    name, state = delay_lab
    server = resolve_host(name, "server", state)
    params = PingParams(count=20, interval=0.05, duration=10, size=56)
    far = resolve_host(name, "far", state)
    argv = Ping().argv(params, server.address)
    out = subprocess.run(
        ["ip", "netns", "exec", far.namespace, *argv], capture_output=True, text=True, timeout=30
    ).stdout
    summary = summarize(out, params.count)
    assert summary["received"] == 20 and summary["transmitted"] > 20, out  # in flight at the end
    assert summary["ping_loss_percent"] > 0  # ping's own figure counts them lost
    assert summary["loss_percent"] == 0.0 and summary["in_flight_at_end"] >= 1
    lossy = resolve_host(name, "lossy", state)
    params = PingParams(count=40, interval=0.01, duration=10, size=56)
    out = subprocess.run(
        ["ip", "netns", "exec", lossy.namespace, *Ping().argv(params, server.address)],
        capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    assert 25 <= summarize(out, params.count)["loss_percent"] <= 75, out
