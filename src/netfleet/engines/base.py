"""What the runner needs from an engine. Engines never know where results are stored.

An engine says how to probe a host for its tool, which options a version lacks, and how to run
one planned run inside a :class:`~netfleet.runner.session.RunSession` (which starts and stops the
processes). ``salvage`` turns whatever the processes printed into an outcome after a timeout or
Ctrl-C.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from netfleet.hosts.base import Host
from netfleet.spec.params import EngineParams

if TYPE_CHECKING:
    from netfleet.runner.session import RunSession


class StopEarly(Exception):
    """Raised by ``RunSession.follow`` when an engine's line handler asked to stop the
    processes (adaptive duration): they got SIGINT and printed their report."""


@dataclass(frozen=True)
class EngineInfo:
    """An engine as installed on one host."""

    name: str
    version: str
    version_tuple: tuple[int, ...]


@dataclass(frozen=True)
class Outcome:
    """How a run ended, decided from the engine's own output. ``result`` is that output: the
    engine's JSON untouched, or for text engines a dict of the raw texts."""

    status: Literal["ok", "failed", "interrupted"]
    reason: str | None
    result: dict[str, Any] | None


class Engine(Protocol):
    name: str
    #: does a run need a server process on the server host?
    needs_server: bool

    async def probe(self, host: Host) -> EngineInfo: ...
    def unsupported(self, params: Any, info: EngineInfo) -> list[str]: ...
    async def execute(self, session: RunSession, params: Any) -> Outcome: ...
    def salvage(self, session: RunSession, params: Any, interrupted: bool) -> Outcome: ...


def check_params(params: EngineParams, model: type[EngineParams]) -> None:
    """Engines receive their own params model; anything else is a programming error."""
    if not isinstance(params, model):
        raise TypeError(f"expected {model.__name__}, got {type(params).__name__}")
