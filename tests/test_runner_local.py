"""The runner against real iperf3 on loopback: envelopes, failures, Ctrl-C."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from netfleet.runner import CampaignInterrupted, run_campaign
from netfleet.spec import load_spec
from netfleet.store import ResultsRoot

SPEC = """\
campaign: local
labels: {cloud: none}
hosts:
  a: {kind: local, labels: {instance_type: loop.a}}
  b: {kind: local, labels: {instance_type: loop.b}}
tests:
  - name: tput
    client: a
    server: b
    labels: {purpose: test}
    params: {duration: 1, interval: 0.5, bitrate: 200mbit}
    matrix: {direction: [out, in]}
"""


def spec_file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_campaign_stores_one_envelope_per_run(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, SPEC))
    root = ResultsRoot(tmp_path / "results")
    result = asyncio.run(run_campaign(spec, root))
    assert result.total == 2 and result.ok == 2, [e.reason for e in result.envelopes]
    files = list(root.files())
    assert len(files) == 2
    docs = [root.read(f) for f in files]
    by_dir = {d["direction"]: d for d in docs}
    assert "--reverse" in by_dir["in"]["engine"]["argv"]
    assert "--reverse" not in by_dir["out"]["engine"]["argv"]
    for d in docs:
        assert d["labels"] == {"cloud": "none", "purpose": "test", "instance_type": "loop.a"}
        assert d["client"]["facts"]["kernel"] == os.uname().release
        assert d["client"]["facts"]["iperf3_version"]
        assert d["client"]["facts"]["mtu"] == 65536  # lo
        # the engine's JSON is kept whole, with the server's own JSON inside
        assert d["result"]["server_output_json"]["intervals"]
        assert len(d["result"]["intervals"]) == 2
        assert d["started_at"] < d["ended_at"]


def test_failed_run_is_recorded_and_campaign_goes_on(tmp_path: Path) -> None:
    text = SPEC.replace("matrix: {direction: [out, in]}", "matrix: {congestion: [nosuchcc, cubic]}")
    spec = load_spec(spec_file(tmp_path, text))
    root = ResultsRoot(tmp_path / "results")
    result = asyncio.run(run_campaign(spec, root))
    assert [e.status for e in result.envelopes] == ["failed", "ok"]
    bad = result.envelopes[0]
    assert bad.reason and "iperf3" in bad.reason
    assert len(list(root.files())) == 2


def test_ctrl_c_stops_cleanly_and_keeps_completed_results(tmp_path: Path) -> None:
    text = (
        SPEC.replace("duration: 1,", "duration: 30,")
        .replace("matrix: {direction: [out, in]}", "")
        .replace("    params:", "    params:")
    )
    text = text.replace(
        "tests:\n",
        "tests:\n  - name: quick\n    client: a\n    server: b\n"
        "    params: {duration: 1, bitrate: 100mbit}\n",
    )
    spec = load_spec(spec_file(tmp_path, text))
    root = ResultsRoot(tmp_path / "results")
    started: list[int] = []

    async def main() -> None:
        from netfleet.runner.events import SilentReporter

        class Watch(SilentReporter):
            def run_progress(self, run, elapsed_s, bits_per_second):  # type: ignore[no-untyped-def]
                if run.test == "tput" and elapsed_s > 1.5:
                    started.append(1)

        task = asyncio.ensure_future(run_campaign(spec, root, Watch()))
        while not started:
            await asyncio.sleep(0.1)
            assert not task.done()
        task.cancel()
        with pytest.raises(CampaignInterrupted) as info:
            await task
        assert "1 of 2 runs completed" in str(info.value)

    asyncio.run(asyncio.wait_for(main(), 60))
    docs = sorted((ResultsRoot.read(f) for f in root.files()), key=lambda d: d["sequence"])
    assert [d["status"] for d in docs] == ["ok", "interrupted"]
    partial = docs[1]["result"]
    assert partial is not None and partial["intervals"], "the partial JSON is kept"
    # no iperf3 we started is still running
    out = subprocess.run(
        ["ps", "-eo", "pid,ppid,comm"], capture_output=True, text=True, check=True
    ).stdout
    assert str(os.getpid()) not in [
        line.split()[1] for line in out.splitlines()[1:] if line.split()[2] == "iperf3"
    ]


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_a_port_someone_else_listens_on_is_never_taken_for_our_server(tmp_path: Path) -> None:
    """Another process (someone else's server, another campaign's) listens on the first port
    the run's server would take: ours cannot bind there, and the client must not measure
    against theirs — the server moves to another port and the run measures iperf3."""
    from netfleet.lab.state import host_namespace
    from netfleet.runner.session import server_port
    from tests.labkit import lab_campaign, lab_up, run, write_spec

    squatter = textwrap.dedent(f"""\
        import socket, sys
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", {server_port(0, 0, 0)})); s.listen(16)
        print("listening", flush=True)
        conns = []
        s.settimeout(60)
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                break
            conns.append(c)
            print("accepted", flush=True)
    """)
    with lab_up(tmp_path, "subnet: 198.18.84.0/24\nhosts:\n  a: {}\n  b: {}\n", "pq") as (
        name,
        state,
    ):
        held = subprocess.Popen(
            ["ip", "netns", "exec", host_namespace(name, "b"), sys.executable, "-c", squatter],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert held.stdout is not None and held.stdout.readline().strip() == "listening"
            tests = "tests: [{name: t, client: a, server: b, params: {duration: 1}}]"
            spec = write_spec(tmp_path, lab_campaign(name, "squat", {"a": "a", "b": "b"}, tests))
            result = run(spec, tmp_path / "results", state)
        finally:
            held.kill()
            out, _ = held.communicate()
    assert "accepted" not in out  # the client never connected to the squatter
    assert result.ok == result.total == 1, [(e.test, e.reason) for e in result.failed]


def test_two_controllers_on_one_host_reach_for_different_server_ports() -> None:
    """Each controller process draws its own start in the port range: two campaigns on one
    host (the ctrl-c test above and another file's local campaign, two users) would otherwise
    try the same ports in the same order, one's client meeting the other's server."""
    code = "from netfleet.runner.session import server_port; print(server_port(1, 0, 0))"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]  # at once: three controllers
    ports = {int(p.communicate(timeout=60)[0]) for p in procs}
    assert len(ports) > 1, ports  # all three the same: 1 in 400 million by chance
