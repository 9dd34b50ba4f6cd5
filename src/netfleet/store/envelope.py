"""The raw result file: the engine's own output, untouched, inside a versioned envelope.

One file per run, gzip JSON, at ``ROOT/d=YYYY-MM-DD/campaign=NAME/<run_id>.json.gz``.
Every key is documented in docs/format.md; bump :data:`FORMAT_VERSION` on any incompatible
change and teach :func:`upgrade` the step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from netfleet.engines.params.base import OTHER_NAMES, spec_params
from netfleet.errors import FormatError

FORMAT_VERSION = 1

RunStatus = Literal["ok", "failed", "interrupted"]


class HostRecord(BaseModel):
    """Who took part in a run, and the context measured on it just before."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str
    address: str
    labels: dict[str, Any] = Field(default_factory=dict)
    facts: dict[str, Any] = Field(default_factory=dict)


class CommandRecord(BaseModel):
    """One process a run started, in start order."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["client", "server"]
    host: str
    argv: list[str]
    returncode: int | None = None


class EngineRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    version: str
    argv: list[str]
    server_argv: list[str] = Field(default_factory=list)
    commands: list[CommandRecord] = Field(default_factory=list)


class HostState(BaseModel):
    """The configuration of one host a verdict depends on (issue 28): unknown stays None
    (``zone_id``: "unknown")."""

    model_config = ConfigDict(extra="forbid")

    #: the zone ID (``use1-az1``), the same in every account — not the per-account zone name
    zone_id: str = "unknown"
    #: ENA Express (``ena_srd_mode`` bit 0); None: the NIC reports no ENA Express counters
    ena_express: bool | None = None
    #: ``ena_srd_*`` over the run: counters as deltas, mode and resource utilization as read
    ena_srd: dict[str, int] = Field(default_factory=dict)
    #: 8th-gen bandwidth weighting (``default``, ``vpc-1``, ``ebs-1``); None: not known
    bandwidth_weighting: str | None = None
    #: the MTU of the interface the run used
    mtu: int | None = None


class ConfigState(BaseModel):
    """Configuration state travelling with a result (absent in results written before)."""

    model_config = ConfigDict(extra="forbid")

    client: HostState
    server: HostState
    #: the date of the provider rules table (:mod:`netfleet.providerrules`) at run time
    rules_as_of: str
    #: each rule's ``as_of`` date at run time, by rule name
    rules: dict[str, str] = Field(default_factory=dict)


class Envelope(BaseModel):
    """Everything about one run. ``result`` is the engine's own JSON, byte-for-byte equivalent."""

    model_config = ConfigDict(extra="forbid")

    netfleet_format: int = FORMAT_VERSION
    netfleet_version: str
    run_id: str
    run_key: str
    campaign: str
    test: str
    repeat: int
    sequence: int
    status: RunStatus
    reason: str | None = None
    direction: Literal["out", "in", "bidir"] | None
    subject: Literal["client", "server"]
    params: dict[str, Any]
    labels: dict[str, Any]
    client: HostRecord
    server: HostRecord
    engine: EngineRecord
    started_at: str
    ended_at: str
    duration_s: float
    result: dict[str, Any] | None = None
    stdout_text: str | None = None
    stderr_text: str | None = None
    notes: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, str] = Field(default_factory=dict)
    #: configuration state (zone ID, ENA Express, bandwidth weighting, MTU, rules date)
    state: ConfigState | None = None


def upgrade(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """Bring a decoded raw file to the current format version, or refuse clearly. Its
    ``params`` are read in the spec's vocabulary (an imported file's ``num_streams`` →
    ``parallel``: :func:`netfleet.engines.params.spec_params`)."""
    version = doc.get("netfleet_format")
    if version == FORMAT_VERSION:
        params = doc.get("params")
        if isinstance(params, dict) and any(k in params for k in OTHER_NAMES):
            doc["params"] = spec_params(params)
        return doc
    if not isinstance(version, int):
        raise FormatError(
            f"{source}: not a netfleet raw result (no integer 'netfleet_format' key)",
            hint="point --results at a directory written by 'netfleet run'",
        )
    raise FormatError(
        f"{source}: raw format version {version} is newer than this netfleet reads "
        f"(version {FORMAT_VERSION})",
        hint="upgrade netfleet (uv sync) to read it",
    )
