"""sockperf 3.x ping-pong: parse its text report (ANSI colours and all) and its full log.

Facts (FIELD-NOTES, checked on 3.7): the reported latency is **half** the round trip unless
``--full-rtt``; the output has ANSI colour codes; the first 400 ms are warm-up and excluded; the
report has percentiles 25…99.999 plus min/max in µs; ``--full-log FILE`` writes the report again
then one ``packet, txTime(sec), rxTime(sec), rtt(usec)`` line per sample (``latency(usec)``
without ``--full-rtt``). netfleet writes the full log to ``/dev/stdout``, computes its own
percentiles from every sample, and keeps the report text plus 0.1 %-step quantiles (not the
samples: ~70,000 per second).
"""

from __future__ import annotations

import re
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SAMPLE = re.compile(r"^\s*\d+,\s*\d+(?:\.\d+)?,\s*\d+(?:\.\d+)?,\s*(\d+(?:\.\d+)?)\s*$")
HEADER = re.compile(r"^packet, txTime\(sec\), rxTime\(sec\), (rtt|latency)\(usec\)")
#: the quantiles kept in the result: every 0.1 %, plus the far tail
QUANTILE_STEPS = 1000
TAIL = (99.95, 99.99, 99.999)


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def server_argv(port: int, bind: str) -> list[str]:
    return ["sockperf", "server", "--ip", bind, "--port", str(port), "--tcp"]


def client_argv(address: str, port: int, duration: float, size: int, full_rtt: bool) -> list[str]:
    argv = ["sockperf", "ping-pong", "--ip", address, "--port", str(port), "--tcp"]
    argv += ["--msg-size", str(size), "--time", str(max(1, round(duration)))]
    argv += ["--full-log", "/dev/stdout"]
    if full_rtt:
        argv.append("--full-rtt")
    return argv


def split_output(text: str) -> tuple[str, list[float], bool | None]:
    """(report text without the sample lines, samples in µs, whether samples are full RTTs)."""
    report: list[str] = []
    samples: list[float] = []
    full: bool | None = None
    for line in strip_ansi(text).splitlines():
        m = SAMPLE.match(line)
        if m is not None:
            samples.append(float(m.group(1)))
            continue
        h = HEADER.match(line)
        if h is not None:
            full = h.group(1) == "rtt"
        report.append(line)
    return "\n".join(report), samples, full


def _first(pattern: str, text: str) -> re.Match[str] | None:
    return re.search(pattern, text)


def parse_report(report: str) -> dict[str, Any]:
    """sockperf's own numbers from its (ANSI-stripped) report; missing ones are None."""
    out: dict[str, Any] = {}
    m = _first(r"\[Valid Duration\] RunTime=(\d+(?:\.\d+)?) sec; SentMessages=(\d+); "
               r"ReceivedMessages=(\d+)", report)  # fmt: skip
    if m:
        out["valid_seconds"] = float(m.group(1))
        out["sent"] = int(m.group(2))
        out["received"] = int(m.group(3))
    m = _first(r"avg-(rtt|latency)=(\d+(?:\.\d+)?) \(std-dev=(\d+(?:\.\d+)?)\)", report)
    if m:
        out["full_rtt"] = m.group(1) == "rtt"
        out["mean_us"] = float(m.group(2))
        out["stdev_us"] = float(m.group(3))
    m = _first(r"# dropped messages = (\d+); # duplicated messages = (\d+); "
               r"# out-of-order messages = (\d+)", report)  # fmt: skip
    if m:
        out["dropped"], out["duplicated"], out["out_of_order"] = (int(x) for x in m.groups())
    pct: dict[str, float] = {}
    for p, v in re.findall(r"percentile (\d+(?:\.\d+)?) =\s*(\d+(?:\.\d+)?)", report):
        pct.setdefault(f"{float(p):g}", float(v))
    out["percentiles_us"] = pct
    m = _first(r"<MAX> observation =\s*(\d+(?:\.\d+)?)", report)
    out["max_us"] = float(m.group(1)) if m else None
    m = _first(r"<MIN> observation =\s*(\d+(?:\.\d+)?)", report)
    out["min_us"] = float(m.group(1)) if m else None
    return out


def sample_stats(samples: list[float]) -> dict[str, Any]:
    """Own statistics over every sample: count, mean, stdev, min, max, p50/p90/p99/p99.9 and
    0.1 %-step quantiles (linear interpolation, numpy's default)."""
    if not samples:
        return {"count": 0}
    import numpy as np  # heavy: only when a sockperf log is summarised

    a = np.asarray(samples, dtype=float)
    steps = np.linspace(0, 100, QUANTILE_STEPS + 1)
    q = np.percentile(a, steps)
    tail = np.percentile(a, TAIL)
    return {
        "count": int(a.size),
        "mean_us": float(a.mean()),
        "stdev_us": float(a.std()),
        "min_us": float(a.min()),
        "max_us": float(a.max()),
        "p50_us": float(np.percentile(a, 50)),
        "p90_us": float(np.percentile(a, 90)),
        "p99_us": float(np.percentile(a, 99)),
        "p999_us": float(np.percentile(a, 99.9)),
        "quantiles_us": [round(float(x), 3) for x in q],
        "tail_us": {f"{p:g}": round(float(x), 3) for p, x in zip(TAIL, tail, strict=True)},
    }


def summarize(stdout: str) -> tuple[str, dict[str, Any]]:
    """(the report text to keep, the summary of one ping-pong run)."""
    report, samples, full = split_output(stdout)
    own = parse_report(report)
    stats = sample_stats(samples)
    full_rtt = full if full is not None else own.get("full_rtt")
    seconds = own.get("valid_seconds")
    received = own.get("received")
    summary: dict[str, Any] = {
        "tool": "sockperf",
        "full_round_trip": full_rtt,
        "transactions": received,
        "transactions_per_s": received / seconds if received and seconds else None,
        "seconds": seconds,
        "percentile_source": "samples" if stats["count"] else "sockperf",
        "samples": stats,
        "sockperf": own,
    }
    src = stats if stats["count"] else {
        "mean_us": own.get("mean_us"), "stdev_us": own.get("stdev_us"),
        "min_us": own.get("min_us"), "max_us": own.get("max_us"),
        "p50_us": own.get("percentiles_us", {}).get("50"),
        "p90_us": own.get("percentiles_us", {}).get("90"),
        "p99_us": own.get("percentiles_us", {}).get("99"),
        "p999_us": own.get("percentiles_us", {}).get("99.9"),
    }  # fmt: skip
    for key in ("mean_us", "stdev_us", "min_us", "max_us", "p50_us", "p90_us", "p99_us", "p999_us"):
        summary[key] = src.get(key)
    return report, summary
