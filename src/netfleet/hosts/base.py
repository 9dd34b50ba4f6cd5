"""The host interface: run a command with a timeout, start/stop a background process, read facts.

Engines and the runner see only this interface, so a new host kind (SSH, cloud) is one more module
and one registry line. Commands are argv lists end to end: no shell is ever involved.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from netfleet.children import reap_own_children
from netfleet.errors import HostError


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


#: the environment variable that carries a process's launch token (see :func:`new_launch_token`)
LAUNCH_TOKEN_ENV = "NETFLEET_LAUNCH_TOKEN"  # noqa: S105 — a variable name, not a secret


def new_launch_token() -> str:
    """A fresh random token for one launch. It is put in the child's environment only — which
    ``/proc/PID/environ`` shows to root and to the process's owner, nobody else — and never
    written to disk: the campaign journal keeps a keyed digest of it (``runner/journal.py``),
    so that a stray can later be proved to be a process netfleet itself started."""
    return secrets.token_hex(16)


class Process:
    """A background process on a host; output is collected as it arrives."""

    #: the random token in the process's environment (``LAUNCH_TOKEN_ENV``); None if it has none
    launch_token: str | None = None

    def __init__(
        self, proc: asyncio.subprocess.Process, argv: list[str], launch_token: str | None = None
    ) -> None:
        self._proc = proc
        self.argv = argv
        self.launch_token = launch_token
        self.stdout_chunks: list[bytes] = []
        self.stderr_chunks: list[bytes] = []
        self._line_listeners: list[Any] = []
        self._readers = [
            asyncio.ensure_future(self._pump(proc.stdout, self.stdout_chunks)),
            asyncio.ensure_future(self._pump(proc.stderr, self.stderr_chunks)),
        ]

    @staticmethod
    async def _pump(stream: asyncio.StreamReader | None, sink: list[bytes]) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            sink.append(chunk)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    @property
    def ended(self) -> bool:
        """Known to have exited. A remote process whose connection was lost is not: it may
        still run, and the campaign journal keeps it as a possible stray."""
        return self.returncode is not None

    async def wait(self, timeout: float | None = None) -> int:
        """Wait for exit and for all output; raise TimeoutError if it outlives ``timeout``."""
        rc = await asyncio.wait_for(self._proc.wait(), timeout)
        await asyncio.gather(*self._readers)
        return rc

    def send(self, sig: int) -> None:
        """Signal the process by its PID while asyncio has not seen it exit.

        Not through ``asyncio.subprocess.Process.send_signal``: before Python 3.13 that calls
        ``subprocess.Popen.send_signal``, whose ``poll()`` reaps a child that has just exited
        before asyncio's child watcher does — which then logs "Unknown child process pid N, will
        report returncode 255" and reports 255 (CPython gh-87744, fixed in 3.13 the same way:
        ``os.kill``). Until the watcher reaps it, the exited child is a zombie that keeps its PID,
        so the signal cannot reach another process."""
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._proc.pid, sig)

    async def stop(self, grace: float = 2.0, first: int = signal.SIGTERM) -> int:
        """Stop by PID: ``first`` signal, then SIGKILL after ``grace`` seconds."""
        if self._proc.returncode is None:
            self.send(first)
            try:
                return await self.wait(grace)
            except TimeoutError:
                self.send(signal.SIGKILL)
        return await self.wait(10)

    @property
    def stdout(self) -> str:
        return b"".join(self.stdout_chunks).decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")


@dataclass
class Host(ABC):
    """A machine (or namespace) that runs engines."""

    name: str
    address: str
    labels: dict[str, Any] = field(default_factory=dict)

    kind = "abstract"

    @abstractmethod
    def wrap(self, argv: list[str]) -> list[str]:
        """The local argv that runs ``argv`` on this host."""

    async def check(self) -> None:  # noqa: B027 — optional hook, most kinds need no check
        """Raise HostError if the host cannot be used (gone, unreachable)."""

    async def close(self) -> None:  # noqa: B027 — optional hook, most kinds hold nothing
        """Release what the host holds open (SSH connections). The host stays usable."""

    def lost(self) -> str | None:
        """Why the machine behind this host was taken away under the campaign (e.g. "interrupted
        by spot reclaim: …"), else None. A run that fails on such a host is recorded as
        *interrupted* with this reason, not *failed*."""
        return None

    async def run(self, argv: list[str], timeout: float = 30) -> CommandResult:
        """Run to completion; HostError if it cannot start or outlives ``timeout``."""
        proc = await self.start(argv)
        try:
            rc = await proc.wait(timeout)
        except TimeoutError as exc:
            await proc.stop(grace=1, first=signal.SIGKILL)
            raise HostError(
                f"{self.name}: {' '.join(argv)!r} did not finish in {timeout:g} s"
            ) from exc
        except BaseException:
            await asyncio.shield(proc.stop(grace=1))
            raise
        return CommandResult(argv, rc, proc.stdout, proc.stderr)

    async def start(self, argv: list[str]) -> Process:
        """Start a background process; stop it with ``Process.stop`` (by its PID)."""
        full = self.wrap(argv)
        reap_own_children()  # else an inherited SIGCHLD=SIG_IGN turns return codes into 255
        token = new_launch_token()
        try:
            proc = await asyncio.create_subprocess_exec(
                *full,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env={**os.environ, LAUNCH_TOKEN_ENV: token},
            )
        except FileNotFoundError as exc:
            raise HostError(
                f"{self.name}: cannot run {full[0]!r}: not installed",
                hint=f"install it on host {self.name}",
            ) from exc
        return Process(proc, full, token)

    def live_bytes(self, proc: Process) -> int | None:
        """Bytes sent + received so far on the interfaces of ``proc``'s network namespace, read
        without spawning anything; None where the kind cannot tell."""
        return None

    async def facts(self) -> dict[str, Any]:
        """Context recorded with every result: kernel, CPUs, MTU, qdisc, tool versions."""
        facts: dict[str, Any] = {}
        uname = await self.run(["uname", "-r"], timeout=10)
        facts["kernel"] = uname.stdout.strip()
        nproc = await self.run(["nproc"], timeout=10)
        facts["cpus"] = int(nproc.stdout.strip() or 0)
        facts.update(await self._interface_facts())
        return facts

    async def _interface_facts(self) -> dict[str, Any]:
        import json

        out: dict[str, Any] = {}
        res = await self.run(["ip", "-j", "addr", "show"], timeout=10)
        if res.returncode != 0:
            return out
        for link in json.loads(res.stdout or "[]"):
            addrs = [a.get("local") for a in link.get("addr_info", [])]
            if self.address in addrs:
                out["interface"] = link.get("ifname")
                out["mtu"] = link.get("mtu")
                out["qdisc"] = link.get("qdisc")
                break
        iface = out.get("interface")
        if iface:
            tc = await self.run(["tc", "-j", "qdisc", "show", "dev", str(iface)], timeout=10)
            if tc.returncode == 0 and tc.stdout.strip():
                out["qdiscs"] = [
                    {k: q.get(k) for k in ("kind", "handle", "root", "options") if k in q}
                    for q in json.loads(tc.stdout)
                ]
            tso = await self.run(["ethtool", "-k", str(iface)], timeout=10)
            if tso.returncode == 0:
                out["offloads"] = {
                    k.strip(): v.split()[0]
                    for k, v in (
                        line.split(":", 1) for line in tso.stdout.splitlines()[1:] if ":" in line
                    )
                    if k.strip()
                    in (
                        "tcp-segmentation-offload",
                        "generic-segmentation-offload",
                        "generic-receive-offload",
                    )
                    and v.split()
                }
        return out


def read_net_dev(path: str) -> int | None:
    """Total rx+tx bytes over the interfaces listed in a /proc/.../net/dev file."""
    try:
        with open(path, encoding="ascii") as fh:
            lines = fh.readlines()[2:]
    except OSError:
        return None
    total = 0
    for line in lines:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if len(fields) >= 9:
            total += int(fields[0]) + int(fields[8])
        del name
    return total
