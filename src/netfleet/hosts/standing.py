"""A host where netfleet runs nothing: a server already listens there, started by someone else.

The case: a Fargate task (``netfleet.cloud``, ``backing: ssh``) whose container runs ``iperf3
--server --json --port 5201`` from its own entry point — one cannot exec into it. The runner
then

- checks and probes nothing on it (preflight skips it: no tools, no version; the client's
  engine version stands in for the server's where an engine asks);
- starts no server: :meth:`serves` says whether the standing server is the one a run asks for
  (same program, every option it asks for present, ``--one-off``/``--port``/``--bind`` aside)
  and on which port — else the run fails with a reason naming both command lines;
- reads the server's side of the test from the client (``--get-server-output``: the server's
  JSON, since it runs with ``--json``);
- records no process for it (there is no PID netfleet could stop).

Anything else asked of it (``start``, ``run``) raises :class:`~netfleet.errors.HostError`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from netfleet.errors import HostError
from netfleet.hosts.base import Host, Process

#: options of a requested server command that do not need to match the standing server's
_FREE = {"--one-off": 0, "-1": 0, "--port": 1, "-p": 1, "--bind": 1, "-B": 1}


@dataclass
class StandingServerHost(Host):
    #: the command that runs there, as its owner started it (e.g. the task's container)
    server_argv: list[str] = field(default_factory=list)
    #: the port it listens on
    server_port: int = 0
    #: what it is, for messages ("Fargate task arn:aws:ecs:…")
    what: str = "a standing server"

    kind = "standing"

    def wrap(self, argv: list[str]) -> list[str]:
        raise self._refuse(argv)

    async def start(self, argv: list[str]) -> Process:
        raise self._refuse(argv)

    async def facts(self) -> dict[str, Any]:
        return {"standing_server": shlex.join(self.server_argv), "what": self.what}

    def serves(self, requested: list[str]) -> int:
        """The port to use when the standing server is the server ``requested`` asks for;
        HostError (naming both commands) when it is not."""
        own = set(self.server_argv[1:])
        wanted: list[str] = []
        skip = 0
        for arg in requested[1:]:
            if skip:
                skip -= 1
                continue
            if arg in _FREE:
                skip = _FREE[arg]
                continue
            wanted.append(arg)
        missing = [a for a in wanted if a not in own]
        if not requested or not self.server_argv or requested[0] != self.server_argv[0] or missing:
            raise HostError(
                f"host {self.name} is {self.what}: its server runs "
                f"`{shlex.join(self.server_argv)}` on its own, but this run needs "
                f"`{shlex.join(requested)}`"
                + (f" (it lacks {' '.join(missing)})" if missing else ""),
                hint="measure it with a test that the standing server answers (iperf3 with "
                "--json, not an adaptive run that needs a live text server before iperf3 3.17)",
            )
        return self.server_port

    def _refuse(self, argv: list[str]) -> HostError:
        return HostError(
            f"host {self.name} is {self.what}: netfleet cannot run {shlex.join(argv)!r} there "
            f"(only its own server runs: `{shlex.join(self.server_argv)}`)",
            hint="use it as a test's server only",
        )


class StandingProcess(Process):
    """The session's stand-in for a server it did not start: no PID, never seen to end; stopping
    it does nothing (its owner stops it: for a Fargate task, stopping the task)."""

    def __init__(self, argv: list[str]) -> None:  # no local process behind it
        self.argv = argv
        self.stdout_chunks: list[bytes] = []
        self.stderr_chunks: list[bytes] = []
        self._line_listeners: list[Any] = []

    @property
    def pid(self) -> int:
        return 0

    @property
    def returncode(self) -> int | None:
        return None

    @property
    def ended(self) -> bool:
        return False

    async def wait(self, timeout: float | None = None) -> int:
        raise TimeoutError("a standing server does not end")

    def send(self, sig: int) -> None:
        return None

    async def stop(self, grace: float = 2.0, first: int = 0) -> int:
        return 0
