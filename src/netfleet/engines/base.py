"""What the runner needs from an engine. Engines never know where results are stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from netfleet.hosts.base import Host


@dataclass(frozen=True)
class EngineInfo:
    """An engine as installed on one host."""

    name: str
    version: str
    version_tuple: tuple[int, ...]


@dataclass(frozen=True)
class Outcome:
    """How a run ended, decided from the engine's own output."""

    status: Literal["ok", "failed", "interrupted"]
    reason: str | None
    result: dict[str, Any] | None


class Engine(Protocol):
    name: str

    async def probe(self, host: Host) -> EngineInfo: ...
    def unsupported(self, params: Any, info: EngineInfo) -> list[str]: ...
    def server_argv(self, port: int, bind: str) -> list[str]: ...
    def client_argv(
        self, params: Any, server_address: str, port: int, subject: str
    ) -> list[str]: ...
    def interpret(
        self, stdout: str, stderr: str, returncode: int, interrupted: bool
    ) -> Outcome: ...
