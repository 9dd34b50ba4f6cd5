"""A run's session: what an engine uses to start servers and clients on the run's hosts.

The session owns every process it starts, so whatever happens — failure, timeout, Ctrl-C — the
runner can stop them all by the PIDs it started. Engines say *what* to run; the session knows
*how*: a free port per server, waiting until it listens, following a client with live rate and a
deadline, handing output lines to the engine as they arrive.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netfleet.engines.contract import EngineInfo, LineHandler, StopEarly
from netfleet.errors import HostError
from netfleet.hosts.base import Host, Process
from netfleet.hosts.standing import StandingProcess, StandingServerHost
from netfleet.plan.matrix import PlannedRun
from netfleet.runner.events import Reporter

PORT_BASE = 20000
PORT_SPAN = 20000
SERVER_READY_S = 10.0
#: how often a followed run reports its live rate and feeds its engine the new output lines
PROGRESS_S = 0.5
#: how often a followed run's processes are checked for their exit between those reports: a
#: run ends this soon after its client does, not up to PROGRESS_S later
EXIT_POLL_S = 0.05
#: where this controller's servers start in the port range: drawn once per process, so that two
#: controllers on one host (two campaigns, two users) do not reach for the same ports in the
#: same order, one's client connecting to the other's server
_PORT_OFFSET = secrets.randbelow(PORT_SPAN)


def server_port(sequence: int, started: int, attempt: int) -> int:
    """The port a run's server tries: spread by the run's sequence number, the processes the
    run has started and the attempt (a port someone else holds sends the server to the next)."""
    spread = _PORT_OFFSET + sequence * 7 + started * 131 + attempt * 7919
    return PORT_BASE + spread % PORT_SPAN


@dataclass
class Started:
    role: str
    host: Host
    process: Process
    argv: list[str]
    port: int | None = None


@dataclass
class RunSession:
    """Implements :class:`netfleet.engines.contract.RunSession` (engines see only that)."""

    run: PlannedRun
    client: Host
    server: Host
    client_info: EngineInfo
    server_info: EngineInfo
    reporter: Reporter
    t0: float = field(default_factory=time.monotonic)
    started: list[Started] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    #: told of every process as soon as it runs (the campaign journal records its PID)
    on_start: Callable[[Started], None] | None = None
    #: raw texts an engine wants kept beside its result (e.g. a text server's stdout)
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def deadline(self) -> float:
        return self.t0 + self.run.timeout

    # ----------------------------------------------------------------------------- processes
    async def start_server(
        self, make_argv: Callable[[int], list[str]], *, protocol: str = "tcp"
    ) -> Started:
        """Start a server on a port of its own and wait until it listens. Tries a few ports.
        On a host whose server runs on its own (a Fargate task) nothing is started: the
        standing server is used if it is the one asked for (HostError if not)."""
        if isinstance(self.server, StandingServerHost):
            port = self.server.serves(make_argv(self.server.server_port))
            argv = list(self.server.server_argv)
            entry = Started("server", self.server, StandingProcess(argv), argv, port)
            self.started.append(entry)  # no PID: nothing for the journal to record or stop
            return entry
        last = ""
        for attempt in range(5):
            port = server_port(self.run.sequence, len(self.started), attempt)
            argv = make_argv(port)
            proc = await self.server.start(argv)
            entry = Started("server", self.server, proc, argv, port)
            self.started.append(entry)
            if self.on_start is not None:
                self.on_start(entry)
            if await self._wait_listening(proc, port, protocol):
                return entry
            await proc.stop(grace=1)
            self.started.remove(entry)
            last = (proc.stderr or proc.stdout).strip()[-300:]
        raise HostError(f"host {self.server.name}: the server did not start: {last or 'no output'}")

    async def _wait_listening(self, proc: Process, port: int, protocol: str) -> bool:
        """Whether ``proc`` listens on ``port``: a socket there is ours only when ``ss -p``
        names our process (or names none: no process information). Another process's socket
        on the port — someone else's server, another campaign's on the same host — is not:
        ours cannot bind, exits, and the caller tries another port, so a client never measures
        against a server netfleet did not start for it."""
        deadline = time.monotonic() + SERVER_READY_S
        flag = "-Hltnp" if protocol == "tcp" else "-Hlunp"
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                return False
            res = await self.server.run(["ss", flag, f"sport = :{port}"], timeout=10)
            if res.returncode == 0 and res.stdout.strip():
                owners = {int(p) for p in re.findall(r"pid=(\d+)", res.stdout)}
                if not owners or not proc.pid or proc.pid in owners:
                    return True
            await asyncio.sleep(0.05)
        return False

    async def start_client(self, argv: list[str], host: Host | None = None) -> Started:
        h = host or self.client
        proc = await h.start(argv)
        entry = Started("client", h, proc, argv)
        self.started.append(entry)
        if self.on_start is not None:
            self.on_start(entry)
        return entry

    async def follow(
        self,
        *entries: Started,
        on_line: LineHandler | None = None,
        lines_of: Started | None = None,
    ) -> None:
        """Wait for processes to exit before the run's deadline (their exit is seen within
        EXIT_POLL_S), reporting the live rate of the first one's namespace twice a second.
        TimeoutError at the deadline; StopEarly when ``on_line`` (fed the stdout lines of
        ``lines_of``, default the first process) returns True — the processes then get SIGINT
        so they still print their report."""
        first = entries[0]
        source = lines_of or first
        last_bytes = first.host.live_bytes(first.process)
        last_t = time.monotonic()
        seen = 0
        pending = b""
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            done = all(e.process.returncode is not None for e in entries)
            if done:
                for e in entries:
                    await e.process.wait(10)
                return
            await _until_ended(entries, min(PROGRESS_S, remaining))
            if on_line is not None:
                chunks = source.process.stdout_chunks
                new = b"".join(chunks[seen:])
                seen = len(chunks)
                pending += new
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if on_line(line.decode("utf-8", "replace")):
                        for e in entries:
                            e.process.send(signal.SIGINT)
                        for e in entries:
                            await e.process.stop(grace=5, first=signal.SIGINT)
                        raise StopEarly
            now_bytes = first.host.live_bytes(first.process)
            now_t = time.monotonic()
            if now_bytes is not None and last_bytes is not None and now_t > last_t:
                self.reporter.run_progress(
                    self.run, now_t - self.t0, (now_bytes - last_bytes) * 8 / (now_t - last_t)
                )
            last_bytes, last_t = now_bytes, now_t

    async def interrupt_clients(self, grace: float = 3.0) -> None:
        """SIGINT every running client (engines print a partial report on it), then kill."""
        clients = [e for e in self.started if e.role == "client"]
        await asyncio.gather(*(e.process.stop(grace=grace, first=signal.SIGINT) for e in clients))

    async def stop_all(self) -> None:
        """Stop everything still running: servers get SIGTERM, then SIGKILL."""
        await asyncio.gather(
            *(e.process.stop(grace=2) for e in self.started if e.process.returncode is None)
        )

    def clients(self) -> list[Started]:
        return [e for e in self.started if e.role == "client"]

    def servers(self) -> list[Started]:
        return [e for e in self.started if e.role == "server"]


async def _until_ended(entries: tuple[Started, ...], seconds: float) -> None:
    """Sleep ``seconds``, or less: until every process of ``entries`` has ended."""
    end = time.monotonic() + seconds
    while not all(e.process.returncode is not None for e in entries):
        left = end - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(EXIT_POLL_S, left))
