"""iperf3: argv construction, version capabilities, and deciding success from its JSON.

iperf3 3.12 exits 0 on "server is busy", refused connections and a server killed mid-test; its
JSON ``error`` key, not the exit code, decides failure (FIELD-NOTES). The server runs with ``-J``
so that ``--get-server-output`` returns the receiver's JSON series.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from netfleet.engines import iperf3_rows
from netfleet.engines.burstable import (
    catalogue_ceiling,
    default_min_duration,
    fixed_basis,
    fleet_burstability,
    no_drop_text,
    steady_evidence,
    still_bursting,
)
from netfleet.engines.contract import (
    Claim,
    EngineInfo,
    Evidence,
    Host,
    ImportFormat,
    Measure,
    Outcome,
    StopEarly,
    Summary,
    TableRows,
    check_params,
    server_sends,
)
from netfleet.engines.iperf3_live import JsonStreamParser, SteadyDetector, TextIntervalParser
from netfleet.engines.probes import tool_version, version_text
from netfleet.engines.summaries import rate_summary
from netfleet.errors import EngineError
from netfleet.units import parse_rate, parse_size

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession
    from netfleet.engines.params import Iperf3Params

#: first iperf3 version with each option (FIELD-NOTES "Version landmarks")
MIN_VERSION: dict[str, tuple[int, ...]] = {
    "bidir": (3, 7),
    "get-server-output": (3, 0),
    "json": (3, 0),
    "one-off": (3, 0, 11),
    "forceflush": (3, 1, 5),
    "json-stream": (3, 17),
}


#: lines only iperf3's human-readable report prints (iperf 2 says "Server listening on TCP
#: port", "Client connecting to", and has no separator nor sender/receiver summary lines);
#: anywhere in a line, since ``--timestamps`` puts the time before each
_TEXT_MARKS = re.compile(
    rb"^[^\n]*?(?:Server listening on \d"
    rb"|Connecting to host "
    rb"|iperf Done\."
    rb"|- - - - - - - - - -"
    rb"|\[ *(?:\d+|SUM)\] +[\d.]+-[\d.]+ +sec .* (?:sender|receiver)\s*$)",
    re.MULTILINE,
)


def is_text_report(plain: bytes) -> bool:
    """Whether a (non-JSON) file is iperf3's human-readable report, client or server side."""
    return plain.lstrip()[:1] != b"{" and _TEXT_MARKS.search(plain[:65536]) is not None


def claim_json(plain: bytes) -> Claim:
    """iperf3 writes JSON: its own when a ``start`` object or a ``--json-stream`` event is
    there, else the catch-all of JSON (and of an empty file), whose reader says what is wrong.
    Its text report is claimed surely too (over iperf 2's catch-all of text), so that its
    reader refuses it by name rather than iperf 2's reader taking it for iperf 2's."""
    head = plain.lstrip()[:4096]
    if not head:
        return 1
    if head[:1] != b"{":
        return 2 if is_text_report(plain) else 0
    return 2 if b'"start"' in head or head.startswith(b'{"event"') else 1


def _obj(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def stream_pmtus(doc: Mapping[str, Any]) -> list[int]:
    """``pmtu`` values the streams of an iperf3 document (and the server's JSON it carries)
    reported."""
    found: list[int] = []
    for d in (doc, _obj(doc.get("server_output_json"))):
        for interval in d.get("intervals") or []:
            for stream in _obj(interval).get("streams") or []:
                v = _number(_obj(stream).get("pmtu"))
                if v:
                    found.append(int(v))
    return found


def iperf3_evidence(result: Mapping[str, Any]) -> Evidence:
    """CPU (client = iperf3's "host", server = its "remote"), bytes sent and retransmits, the
    streams' path MTUs and the stream count, as iperf3's JSON reports them."""
    end = _obj(result.get("end"))
    c = _obj(end.get("cpu_utilization_percent"))
    pairs = (("client", c.get("host_total")), ("server", c.get("remote_total")))
    cpu = {role: v for role, raw in pairs if (v := _number(raw)) is not None}
    sent = _obj(end.get("sum_sent"))
    streams = _number(_obj(_obj(result.get("start")).get("test_start")).get("num_streams"))
    return Evidence(
        cpu=cpu,
        sent_bytes=_number(sent.get("bytes")),
        retransmits=_number(sent.get("retransmits")),
        path_mtus=tuple(stream_pmtus(result)),
        streams=int(streams) if streams else None,
    )


def parse_version(text: str) -> tuple[int, ...]:
    m = re.search(r"iperf (\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        return ()
    return tuple(int(x) for x in m.groups() if x is not None)


class Iperf3:
    name = "iperf3"
    title: ClassVar[str] = "A throughput test with iperf3."
    measures: ClassVar[Measure] = "throughput"
    #: commands the preflight checks
    tools: tuple[str, ...] = ("iperf3",)
    #: tool → package, per package manager
    packages: ClassVar[dict[str, dict[str, str]]] = {
        "iperf3": {"apt-get": "iperf3", "dnf": "iperf3", "yum": "iperf3", "apk": "iperf3"}
    }
    needs_server = True
    #: ``netfleet import``: iperf3 ``-J`` and ``--json-stream`` files (read by the store's
    #: ``import_iperf3``, which checks their intervals)
    imports: ClassVar[ImportFormat] = ImportFormat(
        "iperf3 JSON (-J or --json-stream, client or server side; its text report is refused)",
        lambda plain: claim_json(plain),
    )

    @property
    def params_model(self) -> type[Iperf3Params]:
        from netfleet.engines.params import Iperf3Params

        return Iperf3Params

    @staticmethod
    def evidence(result: Mapping[str, Any]) -> Evidence:
        return iperf3_evidence(result)

    @staticmethod
    def table_rows(
        run_id: str,
        result: Mapping[str, Any],
        params: Mapping[str, Any],
        outputs: Mapping[str, Any],
    ) -> TableRows:
        if "server_stdout" in outputs and "server_output_text" not in result:
            # a live text server (adaptive runs) kept its own stdout beside the client's JSON
            result = {**result, "server_output_text": outputs["server_stdout"]}
        intervals, ends = iperf3_rows.result_rows(run_id, result, params)
        return {"intervals": intervals, "ends": ends}

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        return rate_summary(received_bps(result))

    async def execute(
        self, session: RunSession, params: Iperf3Params, *, target_bps: float | None = None
    ) -> Outcome:
        """One iperf3 run. Adaptive (``until_steady``) runs may be given the baseline they
        should settle at (``target_bps``): then only a steady window at that level stops them."""
        check_params(params, self.params_model)
        if params.until_steady is not None:
            return await self._execute_adaptive(session, params, target_bps)
        address = session.server.address
        server = await session.start_server(lambda port: self.server_argv(port, address))
        assert server.port is not None
        argv = self.client_argv(params, address, server.port, session.run.subject)
        client = await session.start_client(argv)
        await session.follow(client)
        p = client.process
        return self.interpret(p.stdout, p.stderr, p.returncode or 0, interrupted=False)

    async def _execute_adaptive(
        self, session: RunSession, params: Iperf3Params, target_bps: float | None
    ) -> Outcome:
        """Follow intervals live and stop once the rate has been steady for ``until_steady``
        seconds (or at ``duration``). 3.17+: the client's ``--json-stream``; before: a text
        server with ``--forceflush``, whose stdout is kept in the envelope's ``outputs``."""
        assert params.until_steady is not None
        address = session.server.address
        stream = session.client_info.version_tuple >= MIN_VERSION["json-stream"]
        server = await session.start_server(
            lambda port: self.server_argv(port, address, text=not stream, interval=params.interval)
        )
        assert server.port is not None
        argv = self.client_argv(
            params, address, server.port, session.run.subject, json_stream=stream
        )
        client = await session.start_client(argv)
        hosts = [session.client.labels, session.server.labels]
        fixed_why = fixed_basis(hosts)
        minimum = default_min_duration(
            params.min_duration,
            fleet_burstability(hosts),
            params.duration,
            params.longest_burst,
            fixed_why,
        )
        detector = SteadyDetector(
            window_s=params.until_steady,
            tolerance=params.steady_tolerance,
            min_duration_s=minimum.seconds,
            target=target_bps,
            ceiling=catalogue_ceiling(hosts),
        )
        parser: JsonStreamParser | TextIntervalParser = (
            JsonStreamParser() if stream else TextIntervalParser(streams=params.parallel)
        )

        def on_line(line: str) -> bool:
            iv = parser.feed(line)
            return iv is not None and detector.add(iv)

        try:
            await session.follow(client, on_line=on_line, lines_of=client if stream else server)
            stop = "max_duration"
        except StopEarly:
            stop = "steady"
            await server.process.stop(grace=3)
        series = detector.series
        span = series[-1].end if series else None
        evidence = steady_evidence(
            drop_seen_at=detector.drop_seen_at,
            at_target=target_bps is not None and stop == "steady",
            burstability=minimum.burstability,
            span=span,
            longest_burst=params.longest_burst if params.min_duration is None else None,
            fixed_why=fixed_why,
        )
        bursting = still_bursting(detector.level(), hosts) if target_bps is None else None
        if bursting is not None:
            evidence = None  # the host's own baseline says this level is the burst
        session.notes["adaptive"] = {
            "stop": stop,
            # "steady" only with evidence; a flat level without it may be a burst not yet ended
            "verdict": "steady" if evidence else "no-drop",
            "steady_evidence": evidence,
            "verdict_text": evidence or bursting or no_drop_text(span),
            "still_bursting": bursting,
            "min_duration_s": minimum.seconds,
            "min_duration_basis": minimum.basis,
            "burstability": minimum.burstability,
            "live_source": "client json-stream" if stream else "server text (--forceflush)",
            "until_steady_s": params.until_steady,
            "steady_tolerance": params.steady_tolerance,
            "drop_seen_at_s": detector.drop_seen_at,
            "drop_confirmed_at_s": detector.drop_confirmed_at,
            "steady_since_s": detector.steady_since,
            "stopped_at_s": span,
            "level_bps": detector.level(),
            "target_bps": target_bps,
        }
        if not stream:
            session.outputs["server_stdout"] = server.process.stdout
        p = client.process
        outcome = self.interpret(p.stdout, p.stderr, p.returncode or 0, interrupted=False)
        if stop == "steady" and outcome.result is not None and outcome.result.get("intervals"):
            # The client was stopped on purpose: its "interrupt" error is expected.
            return Outcome("ok", None, outcome.result)
        return outcome

    def salvage(self, session: RunSession, params: Iperf3Params, interrupted: bool) -> Outcome:
        clients = session.clients()
        if not clients:
            return Outcome(
                "interrupted" if interrupted else "failed",
                "stopped before the client started",
                None,
            )
        p = clients[-1].process
        return self.interpret(p.stdout, p.stderr, p.returncode or 0, interrupted=interrupted)

    async def probe(self, host: Host) -> EngineInfo:
        version = await tool_version(host, "iperf3")
        if not version:
            raise EngineError(
                f"host {host.name}: iperf3 is not installed (or prints no version)",
                hint="install iperf3 ≥ 3.1 (Debian: apt-get install iperf3)",
            )
        return EngineInfo(self.name, version_text(version), version)

    def unsupported(self, params: Iperf3Params, info: EngineInfo) -> list[str]:
        """Options the given iperf3 lacks, as readable reasons (empty when all is well)."""
        needs = ["json", "get-server-output", "one-off"]
        if params.direction == "bidir":
            needs.append("bidir")
        if params.until_steady is not None:
            needs.append("forceflush")
        return [
            f"--{opt} needs iperf3 ≥ {'.'.join(map(str, MIN_VERSION[opt]))}, "
            f"this host has {info.version}"
            for opt in needs
            if info.version_tuple < MIN_VERSION[opt]
        ]

    def server_argv(
        self, port: int, bind: str, *, text: bool = False, interval: float = 1
    ) -> list[str]:
        """A one-off server on its own port: JSON (``-J``) normally; a live text server
        (``--forceflush``, whole Kbit/s) when intervals must be read as they happen."""
        if text:
            return [
                "iperf3",
                "--server",
                "--one-off",
                "--forceflush",
                "--format",
                "k",
                "--interval",
                _num(interval),
                "--port",
                str(port),
                "--bind",
                bind,
            ]
        return ["iperf3", "--server", "--json", "--one-off", "--port", str(port), "--bind", bind]

    def client_argv(
        self,
        params: Iperf3Params,
        server_address: str,
        port: int,
        subject: str,
        *,
        json_stream: bool = False,
    ) -> list[str]:
        argv = [
            "iperf3",
            "--client",
            server_address,
            "--port",
            str(port),
            "--json-stream" if json_stream else "--json",
            "--get-server-output",
            "--time",
            _num(params.duration),
            "--interval",
            _num(params.interval),
            "--parallel",
            str(params.parallel),
        ]
        if params.omit:
            argv += ["--omit", str(params.omit)]
        if params.direction == "bidir":
            argv.append("--bidir")
        elif server_sends(params.direction, subject):
            argv.append("--reverse")  # the server sends
        if params.protocol == "udp":
            argv += ["--udp", "--bitrate", str(int(parse_rate(params.bitrate or "1mbit")))]
        elif params.bitrate:
            argv += ["--bitrate", str(int(parse_rate(params.bitrate)))]
        if params.window is not None:
            argv += ["--window", str(int(parse_size(params.window)))]
        if params.length is not None:
            argv += ["--length", str(int(parse_size(params.length)))]
        if params.mss is not None:
            argv += ["--set-mss", str(params.mss)]
        if params.congestion:
            argv += ["--congestion", params.congestion]
        if params.affinity:
            argv += ["--affinity", params.affinity]
        if params.zerocopy:
            argv.append("--zerocopy")
        return argv

    def interpret(self, stdout: str, stderr: str, returncode: int, interrupted: bool) -> Outcome:
        doc = _json_object(stdout)
        if doc is None:
            tail = (stderr.strip() or stdout.strip())[-300:] or "no output"
            status: Literal["interrupted", "failed"] = "interrupted" if interrupted else "failed"
            return Outcome(status, f"iperf3 printed no JSON (exit {returncode}): {tail}", None)
        error = doc.get("error")
        if interrupted:
            return Outcome("interrupted", str(error or "interrupted by the user"), doc)
        if error:
            return Outcome("failed", f"iperf3: {error}", doc)
        if returncode != 0:
            return Outcome("failed", f"iperf3 exited {returncode}: {stderr.strip()[-300:]}", doc)
        if not doc.get("end"):
            return Outcome("failed", "iperf3 JSON has no end summary", doc)
        server = doc.get("server_output_json")
        if isinstance(server, dict) and server.get("error"):
            return Outcome("failed", f"iperf3 server: {server['error']}", doc)
        return Outcome("ok", None, doc)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _json_object(text: str) -> dict[str, Any] | None:
    text = text.strip()
    if not text:
        return None
    if text.startswith('{"event"'):
        return JsonStreamParser().parse_all(text)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        start = text.find("{")
        if start < 0:
            return None
        try:
            doc, _ = json.JSONDecoder().raw_decode(text[start:])
        except json.JSONDecodeError:
            return None
    return doc if isinstance(doc, dict) else None


def received_bps(result: Mapping[str, Any] | None, *, intervals: bool = True) -> float | None:
    """THE received rate (goodput, bit/s) of one raw iperf3 JSON result: the receiver's end
    summary (``sum_received``, or ``sum`` where iperf3 prints only that); with ``intervals``, a
    run stopped early (its ``end`` is empty) falls back to the mean of its non-omitted intervals.
    Used by progress lines, advice evidence and anything else that needs one number."""
    if not isinstance(result, Mapping):
        return None
    end = result.get("end")
    end = end if isinstance(end, Mapping) else {}
    summary = end.get("sum_received") or (end.get("sum") if intervals else None)
    if isinstance(summary, Mapping):
        value = summary.get("bits_per_second")
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and (value or not intervals)
        ):
            return float(value)
    if not intervals:
        return None
    rates = [
        float(iv["sum"]["bits_per_second"])
        for iv in result.get("intervals") or []
        if isinstance(iv, Mapping)
        and isinstance(iv.get("sum"), Mapping)
        and not iv["sum"].get("omitted")
        and isinstance(iv["sum"].get("bits_per_second"), int | float)
    ]
    return sum(rates) / len(rates) if rates else None
