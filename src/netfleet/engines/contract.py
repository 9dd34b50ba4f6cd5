"""The engine contract: what the runner needs from an engine, and what an engine may use of the
run session and its hosts. Engines never know where results are stored.

An engine says how to probe a host for its tool, which options a version lacks, and how to run
one planned run inside a :class:`RunSession` (which starts and stops the processes). ``salvage``
turns whatever the processes printed into an outcome after a timeout or Ctrl-C.

The session, its hosts and processes are *Protocols* here: ``runner/session.py`` and
``hosts/base.py`` implement them, and engines import neither (engines rank just above the base
modules: they import only ``errors``, ``units`` and this contract).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from netfleet.values import Columns

if TYPE_CHECKING:  # (the models are pydantic's: an engine's module loads them when used)
    from netfleet.engines.params.base import EngineParams


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


#: one catalog row (column → value); ``table_rows`` returns them per table name
Row = dict[str, Any]
#: table name (``runs``, ``intervals``, ``ends``, ``latency``, ...) → rows: dict rows, or
#: :class:`~netfleet.values.Columns` (iperf3's intervals, built a column at a time)
TableRows = Mapping[str, list[Row] | Columns]
#: what a test measures: which reports read it (cheat sheet/topology: throughput; latency
#: tables: latency; the credit model: credit; ``report pps``: packets)
Measure = Literal["throughput", "latency", "credit", "packets"]


@dataclass(frozen=True)
class Summary:
    """An engine's one-line summary of its raw result: the received rate in bit/s (goodput,
    receiver side; ``None`` where the engine measures no rate or the result holds none) and a
    few words for the run's progress line."""

    received_bps: float | None
    text: str


@dataclass(frozen=True)
class Evidence:
    """What the advice rules read of a stored result, where the tool reports it (an engine's
    optional ``evidence(result)``; an engine without one gives advice nothing beyond its
    summary's rate)."""

    #: CPU % by role: ``client`` (iperf3's "host") and ``server`` (its "remote")
    cpu: Mapping[str, float] = field(default_factory=dict)
    #: bytes the sender sent, and TCP retransmits
    sent_bytes: float | None = None
    retransmits: float | None = None
    #: path MTUs the sending streams reported
    path_mtus: tuple[int, ...] = ()
    #: streams the tool itself reports it ran (a run's own ``-P``, also for imported files)
    streams: int | None = None


#: an engine process using at least this share of one CPU (its own figure, e.g. iperf3's
#: ``cpu_utilization_percent``) was the limit: the number is the tool's, not the network's
CPU_BOUND_PERCENT = 90.0
#: the whole machine's CPUs (/proc/stat, every process) at least this busy during a run
MACHINE_BUSY_PERCENT = 90.0
#: an engine below this share of one CPU had what it needed, however busy the machine was
ENGINE_CALM_PERCENT = 25.0


def server_sends(direction: str, subject: str) -> bool:
    """Whether the server end sends (the client's ``--reverse``) for a one-way ``direction``
    ("out": the subject sends, "in": it receives) seen from ``subject`` (client or server)."""
    return (direction == "in") == (subject == "client")


#: where an engine's own CPU figure came from: the tool's report, or netfleet's reading
TOOL_CPU = "the tool's own cpu_utilization_percent"
PROC_CPU = "/proc/PID/stat of the engine process"


def engine_cpu(
    reported: Mapping[str, float], notes: Mapping[str, Any] | None
) -> tuple[dict[str, float], str]:
    """A run's engine CPU by role (100 = one CPU) and where it came from: the tool's own
    report (iperf3's ``cpu_utilization_percent``) where there is one, else what netfleet read
    of the processes it started (``notes.engine_cpu``: iperf2, sockperf, irtt, ping)."""
    if reported:
        return dict(reported), TOOL_CPU
    own = notes.get("engine_cpu") if isinstance(notes, Mapping) else None
    if not isinstance(own, Mapping):
        return {}, TOOL_CPU
    found = {
        role: float(v)
        for role, v in own.items()
        if role in ("client", "server") and isinstance(v, int | float) and v == v
    }
    return found, PROC_CPU


def cpu_limits(
    cpu: Mapping[str, float], machine_busy: float | None = None, source: str = TOOL_CPU
) -> dict[str, str]:
    """Why a run's engine may have limited it, by role (``client``/``server``; ``host`` when
    the engine's own CPU is unknown): the one rule advice ("cpu-bound") and analyze
    ("host-limited") both judge by.

    * an engine at ≥ :data:`CPU_BOUND_PERCENT` of a CPU (its own figure) was the limit;
    * on a machine ≥ :data:`MACHINE_BUSY_PERCENT` busy (``machine_busy``: /proc/stat, other
      people's processes included) an engine that needed ≥ :data:`ENGINE_CALM_PERCENT` of a
      CPU may have been starved, and so may one whose CPU is not reported;
    * an engine that used little CPU was not limited, whatever else the machine ran."""
    out = {
        role: f"its engine at {pct:.0f} % of a CPU ({source})"
        for role, pct in cpu.items()
        if pct >= CPU_BOUND_PERCENT
    }
    if out or machine_busy is None or machine_busy < MACHINE_BUSY_PERCENT:
        return out
    if not cpu:
        return {
            "host": f"the machine's CPUs {machine_busy:.0f} % busy (/proc/stat, every process) "
            "and the engine's own CPU not reported"
        }
    return {
        role: f"its engine at {pct:.0f} % of a CPU ({source}) while the machine's CPUs were "
        f"{machine_busy:.0f} % busy (/proc/stat): it may have been starved"
        for role, pct in cpu.items()
        if pct >= ENGINE_CALM_PERCENT
    }


@dataclass(frozen=True)
class ImportedRun:
    """One output file of an engine's tool, produced outside netfleet and read by the engine
    (``netfleet import``): neutral values the store wraps in an envelope with the file's bytes
    and provenance. ``params`` speak the spec's vocabulary (``parallel``, ``duration``...)."""

    result: dict[str, Any]
    subject: Literal["client", "server"]
    direction: Literal["out", "in", "bidir"] | None
    duration_s: float
    params: dict[str, Any] = field(default_factory=dict)
    #: epoch seconds; None: from the path's ``{epoch}`` or the file's mtime (then "inferred")
    started_at: float | None = None
    version: str = "unknown"
    status: Literal["ok", "failed"] = "ok"
    reason: str | None = None
    client_address: str = ""
    server_address: str = ""
    #: interval sums that do not add up (listed in ``notes.imported.flags``)
    flags: list[dict[str, Any]] = field(default_factory=list)


#: how sure an importer is that a file is its tool's output: 0 not its own, 1 the catch-all of
#: its kind (JSON, text: its reader then says what is wrong), 2 its own signature
Claim = Literal[0, 1, 2]


@dataclass(frozen=True)
class ImportFormat:
    """An engine's ``imports``: which files it reads (``claims``, on the decompressed bytes) and
    how (``read`` with the ``--side`` asked: auto, client or server). ``read`` is None for the
    engines whose readers live in the store with its interval checks (iperf3, iperf 2)."""

    title: str
    claims: Callable[[bytes], Claim]
    read: Callable[[bytes, str], ImportedRun] | None = None


class CommandOutput(Protocol):
    """A finished command on a host."""

    @property
    def returncode(self) -> int: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...


class EngineProcess(Protocol):
    """A background process on a host; output is collected as it arrives."""

    stdout_chunks: list[bytes]

    @property
    def returncode(self) -> int | None: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...
    def send(self, sig: int) -> None: ...
    async def wait(self, timeout: float | None = None) -> int: ...
    async def stop(self, grace: float = 2.0, first: int = ...) -> int: ...


class Host(Protocol):
    """What an engine may do on a host: run a command to completion (argv, never a shell)."""

    name: str
    #: the host's labels (e.g. ``burstable``: what is known of its bandwidth)
    labels: dict[str, Any]

    @property
    def address(self) -> str: ...

    async def run(self, argv: list[str], timeout: float = 30) -> CommandOutput: ...


class Started(Protocol):
    """A process the session started for an engine (server or client)."""

    role: str
    port: int | None

    @property
    def host(self) -> Host: ...
    @property
    def process(self) -> EngineProcess: ...


class PlannedRunView(Protocol):
    """The part of a planned run an engine reads."""

    @property
    def subject(self) -> str: ...


#: called with each complete stdout line of a followed process; return True to stop it early
LineHandler = Callable[[str], bool | None]


class RunSession(Protocol):
    """One run's processes, as an engine sees them (``netfleet.runner.session`` implements it)."""

    notes: dict[str, Any]
    outputs: dict[str, str]
    t0: float

    @property
    def run(self) -> PlannedRunView: ...
    @property
    def client(self) -> Host: ...
    @property
    def server(self) -> Host: ...
    @property
    def client_info(self) -> EngineInfo: ...
    @property
    def server_info(self) -> EngineInfo: ...

    async def start_server(
        self, make_argv: Callable[[int], list[str]], *, protocol: str = "tcp"
    ) -> Started: ...
    # ``Any`` where the implementation takes its own concrete host/process types back
    # (a Protocol parameter must accept every implementation's narrower type).
    async def start_client(self, argv: list[str], host: Any = None) -> Started: ...
    async def follow(
        self, *entries: Any, on_line: LineHandler | None = None, lines_of: Any = None
    ) -> None: ...
    def clients(self) -> Sequence[Started]: ...
    def servers(self) -> Sequence[Started]: ...


class Engine(Protocol):
    """Everything netfleet knows about an engine, in one place. The registry
    (``engines/__init__.py``) maps names to these; the spec's test union
    (``spec/models.TEST_KINDS``), the preflight tool list, the package list, the catalog parsers
    and the progress/advice summary are all derived from it."""

    name: str

    # read-only members (engines set them as class attributes of their own narrower types)
    @property
    def title(self) -> str:
        """One line describing the test kind (the spec schema's description)."""
        ...

    @property
    def params_model(self) -> type[EngineParams]:
        """The model of its ``params:`` block in a spec (a test without ``params`` gets the
        model's defaults when every field has one)."""
        ...

    @property
    def measures(self) -> Measure:
        """Which reports read its results."""
        ...

    #: does a run need a server process on the server host?
    needs_server: bool
    #: commands the preflight checks on every host of a run
    tools: tuple[str, ...]
    #: tool → package providing it, per package manager (``hosts/packages.py`` merges these)
    packages: ClassVar[dict[str, dict[str, str]]]

    async def probe(self, host: Host) -> EngineInfo: ...
    def unsupported(self, params: Any, info: EngineInfo) -> list[str]: ...
    async def execute(self, session: RunSession, params: Any) -> Outcome: ...
    def salvage(self, session: RunSession, params: Any, interrupted: bool) -> Outcome: ...
    def table_rows(
        self,
        run_id: str,
        result: Mapping[str, Any],
        params: Mapping[str, Any],
        outputs: Mapping[str, Any],
    ) -> TableRows:
        """Catalog rows of one stored ``result`` (with the run's stored ``params`` and the raw
        ``outputs`` the session kept beside it). A ``runs`` entry holds one partial row whose
        non-NULL values fill the run's NULL columns. Never raises on odd engine output."""
        ...

    def summary(self, result: Mapping[str, Any]) -> Summary:
        """The received rate and a few words, read from a stored ``result``."""
        ...

    # Optional members (read through ``netfleet.engines``' helpers, absent on most engines):
    #   evidence(result) -> Evidence       what advice reads (CPU, retransmits, path MTU, streams)
    #   imports: ImportFormat              the tool's own output files ``netfleet import`` reads


def check_params(params: EngineParams, model: type[EngineParams]) -> None:
    """Engines receive their own params model; anything else is a programming error."""
    if not isinstance(params, model):
        raise TypeError(f"expected {model.__name__}, got {type(params).__name__}")
