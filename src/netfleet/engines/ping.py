"""ICMP echo with iputils ping: count, payload size, interval; loss and min/avg/max/mdev.

Client only (``needs_server = False``): the target is the server host's address. netfleet parses
every reply line for its own percentiles as well as ping's summary.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from netfleet.engines.contract import (
    EngineInfo,
    Host,
    Measure,
    Outcome,
    Summary,
    TableRows,
    check_params,
)
from netfleet.engines.latency_rows import latency_row
from netfleet.engines.params.ping import PingParams
from netfleet.engines.summaries import latency_summary
from netfleet.errors import EngineError, HostError
from netfleet.values import obj

if TYPE_CHECKING:
    from netfleet.engines.contract import RunSession

REPLY = re.compile(r"icmp_seq=(\d+) ttl=\d+ time=([\d.]+) ms")
STATS = re.compile(r"(\d+) packets transmitted, (\d+) received.*?([\d.]+)% packet loss")
RTT = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")


def summarize(stdout: str, count: int | None = None) -> dict[str, Any]:
    """ping's summary and netfleet's percentiles of the replies. With ``count`` (the ``-c``
    asked): ping run with a deadline (``-w``) keeps sending until ``count`` replies came and
    then exits, so requests sent after the last answered one were still in flight, not lost
    (on a 70 ms path ping itself reported 5.7 % loss where nothing was lost). Loss is then
    counted over the requests up to the last answered one (``in_flight_at_end`` the others;
    ``ping_loss_percent`` ping's own figure); a run that ended on its deadline short of
    ``count`` replies keeps ping's count."""
    replies = [(int(m.group(1)), float(m.group(2)) * 1000) for m in REPLY.finditer(stdout)]
    times = [t for _, t in replies]
    out: dict[str, Any] = {"tool": "ping", "full_round_trip": True, "replies_us": len(times)}
    m = STATS.search(stdout)
    if m:
        out["transmitted"], out["received"] = int(m.group(1)), int(m.group(2))
        out["loss_percent"] = float(m.group(3))
        answered = {seq for seq, _ in replies}
        if count is not None and answered and out["received"] >= count:
            last = max(answered)
            in_flight = max(0, out["transmitted"] - last)
            if in_flight:
                asked = out["transmitted"] - in_flight
                out["ping_loss_percent"] = out["loss_percent"]
                out["in_flight_at_end"] = in_flight
                out["loss_percent"] = 100.0 * max(0, asked - len(answered)) / asked
    r = RTT.search(stdout)
    if r:
        out["min_us"], out["mean_us"], out["max_us"], out["mdev_us"] = (
            float(x) * 1000 for x in r.groups()
        )
    if times:
        s = sorted(times)

        def pct(p: float) -> float:
            k = (len(s) - 1) * p / 100
            lo = int(k)
            hi = min(lo + 1, len(s) - 1)
            return s[lo] + (s[hi] - s[lo]) * (k - lo)

        out.update(p50_us=pct(50), p90_us=pct(90), p99_us=pct(99), p999_us=pct(99.9))
    return out


def ping_rows(
    run_id: str,
    result: Mapping[str, Any],
    params: Mapping[str, Any],
    outputs: Mapping[str, Any] | None = None,
) -> TableRows:
    """Rows of a ``ping`` result, re-parsed from ping's own output."""
    text = result.get("output")
    count = params.get("count")
    asked = count if isinstance(count, int) and not isinstance(count, bool) else None
    summary = summarize(text, asked) if isinstance(text, str) else dict(obj(result))
    summary["percentile_source"] = "replies"
    summary["size"] = params.get("size")
    summary["transactions"] = summary.get("received")
    return {"latency": [latency_row(run_id, "ping", "icmp", summary)]}


class Ping:
    name = "ping"
    title: ClassVar[str] = (
        "ICMP echo from the client to the server host's address (no server process)."
    )
    params_model: ClassVar[type[PingParams]] = PingParams
    measures: ClassVar[Measure] = "latency"
    #: commands the preflight checks
    tools: tuple[str, ...] = ("ping",)
    #: tool → package, per package manager
    packages: ClassVar[dict[str, dict[str, str]]] = {
        "ping": {"apt-get": "iputils-ping", "dnf": "iputils", "yum": "iputils", "apk": "iputils"}
    }
    needs_server = False

    table_rows = staticmethod(ping_rows)

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        summary = result.get("summary")
        return latency_summary(summary if isinstance(summary, Mapping) else {})

    async def probe(self, host: Host) -> EngineInfo:
        try:
            res = await host.run(["ping", "-V"], timeout=10)
        except HostError as exc:
            raise EngineError(
                f"host {host.name}: ping is not installed",
                hint="install it (Debian: apt-get install iputils-ping)",
            ) from exc
        m = re.search(r"iputils[- ]?(\S+)", res.stdout + res.stderr)
        if res.returncode != 0 or m is None:
            raise EngineError(
                f"host {host.name}: cannot run ping ({(res.stderr or res.stdout).strip()[:200]})",
                hint="install iputils-ping",
            )
        digits = tuple(int(x) for x in re.findall(r"\d+", m.group(1))[:3])
        return EngineInfo(self.name, m.group(1), digits)

    def unsupported(self, params: PingParams, info: EngineInfo) -> list[str]:
        return []

    def argv(self, params: PingParams, address: str) -> list[str]:
        return [
            "ping", "-n", "-c", str(params.count), "-s", str(params.size),
            "-i", f"{params.interval:g}", "-w", f"{params.duration:g}", address,
        ]  # fmt: skip

    async def execute(self, session: RunSession, params: PingParams) -> Outcome:
        check_params(params, PingParams)
        client = await session.start_client(self.argv(params, session.server.address))
        await session.follow(client)
        return self.salvage(session, params, interrupted=False)

    def salvage(self, session: RunSession, params: PingParams, interrupted: bool) -> Outcome:
        clients = session.clients()
        if not clients:
            why = "stopped before ping started"
            return Outcome("interrupted" if interrupted else "failed", why, None)
        p = clients[-1].process
        summary = summarize(p.stdout, params.count)
        result = {"tool": "ping", "output": p.stdout, "summary": summary}
        status: Literal["ok", "failed", "interrupted"] = "ok"
        reason = None
        if interrupted:
            status, reason = "interrupted", "interrupted by the user"
        elif "transmitted" not in summary:
            status = "failed"
            reason = f"ping printed no statistics: {(p.stderr or p.stdout).strip()[-300:]}"
        elif not summary.get("received"):
            status, reason = "failed", "no reply: 100% packet loss"
        return Outcome(status, reason, result)
