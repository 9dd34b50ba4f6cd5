"""Helpers for tests that run real campaigns in a real lab: a lab from YAML text (always torn
down), a campaign spec over a lab's hosts, a spec file from text, a campaign run to
completion, a wait for a server in a lab namespace to listen."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import textwrap
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from netfleet import lab
from netfleet.runner import CampaignResult, run_campaign
from netfleet.spec import load_spec
from netfleet.store import ResultsRoot


def unique_name(prefix: str) -> str:
    """A lab name no other test (or session) uses: namespaces are machine-wide."""
    return prefix + secrets.token_hex(3)


@contextmanager
def lab_up(tmp_path: Path, body: str, prefix: str = "t") -> Iterator[tuple[str, Path]]:
    """Bring up a lab whose file is ``name: <unique>`` + ``body``; yield (name, state dir);
    tear it down whatever happens."""
    name = unique_name(prefix)
    state = tmp_path / "labstate"
    f = tmp_path / f"{name}.yaml"
    f.write_text(f"name: {name}\n" + textwrap.dedent(body))
    lab.up(lab.load_lab(f), state_dir=state)
    try:
        yield name, state
    finally:
        lab.down(name, state_dir=state)


def lab_campaign(
    lab: str, campaign: str, hosts: Mapping[str, str | Mapping[str, Any]], rest: str
) -> str:
    """A campaign spec's text over the hosts of lab ``lab``: ``hosts`` maps each of the spec's
    hosts to its lab host's name, or to its fields (``host`` and ``via``, ``labels``,
    ``chroot`` …); ``rest`` is the YAML after the hosts (``tests:`` and any other key)."""
    lines = [f"campaign: {campaign}", "hosts:"]
    for key, value in hosts.items():
        fields = {"host": value} if isinstance(value, str) else dict(value)
        lines.append(f"  {key}: {json.dumps({'kind': 'netns', 'lab': lab, **fields})}")
    return "\n".join(lines) + "\n" + textwrap.dedent(rest)


def take_down(name: str, state_dir: Path) -> None:
    """``lab.down``, then, as a last resort, delete what is left of ``nf-<name>-*`` (only our
    random prefix)."""
    try:
        lab.down(name, state_dir)
    finally:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
        for line in out.stdout.splitlines():
            ns = line.split()[0] if line.strip() else ""
            if ns.startswith(f"nf-{name}-"):
                subprocess.run(["ip", "netns", "delete", ns], check=False)


def stop(proc: subprocess.Popen[Any]) -> None:
    """Stop a process we started, by its PID."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_listening(
    ns: str,
    port: int,
    *,
    udp: bool = False,
    proc: subprocess.Popen[Any] | None = None,
    timeout: float = 30.0,
) -> None:
    """Until a socket listens on ``port`` (TCP, or UDP) in namespace ``ns``: a server started a
    moment ago is ready on a machine however busy (a fixed sleep is not). Fails at once when
    ``proc``, the server, has exited; ``timeout`` bounds the wait, it is no speed claim."""
    argv = ["ss", "-N", ns, "-Hlun" if udp else "-Hltn", "sport", "=", f":{port}"]
    deadline = time.monotonic() + timeout
    while not subprocess.run(argv, capture_output=True, text=True).stdout.strip():
        assert proc is None or proc.poll() is None, f"the server on port {port} in {ns} exited"
        assert time.monotonic() < deadline, f"nothing listens on port {port} in {ns}"
        time.sleep(0.05)


def write_spec(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def run(spec_path: Path, results: Path, state: Path | None = None) -> CampaignResult:
    """Run a campaign spec to completion against ``results``."""
    return asyncio.run(
        run_campaign(load_spec(spec_path), ResultsRoot(results), lab_state_dir=state)
    )
