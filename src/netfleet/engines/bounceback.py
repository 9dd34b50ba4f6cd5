"""iperf 2 ``--bounceback``: TCP request/response latency (2.1.8 works; FIELD-NOTES).

The client writes ``size`` bytes, the server bounces them back; ``--bounceback-period 0`` sends
the next request as soon as the answer is in (back to back, like uperf's profile). The final
report line carries ``BB cnt=avg/min/max/stdev`` in ms and ``N rps``; a ``BB8(f)-PDF`` line is a
histogram in 100 µs bins (bin k holds ((k−1)·w, k·w]): percentiles from it are bin upper bounds,
so their resolution is 100 µs. Always the full round trip.
"""

from __future__ import annotations

import re
from typing import Any

FINAL = re.compile(
    r"\]\s+([\d.]+)-([\d.]+) sec .*?(\d+)=([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms.*?(\d+) rps"
)
PDF = re.compile(r"PDF: bin\(w=(\d+)(us|ms)\):cnt\((\d+)\)=([\d:,]+)")


def server_argv(port: int, bind: str) -> list[str]:
    return ["iperf", "--server", "--port", str(port), "--bind", bind]


def client_argv(address: str, port: int, duration: float, size: int) -> list[str]:
    return [
        "iperf", "--client", address, "--port", str(port), "--bounceback",
        "--bounceback-period", "0", "--len", str(size), "--time", f"{duration:g}",
        "--interval", "1", "--enhanced",
    ]  # fmt: skip


def histogram_percentiles(bins: dict[int, int], width_us: float) -> dict[str, float]:
    """Upper bounds of the bins holding p50/p90/p99/p99.9."""
    total = sum(bins.values())
    out: dict[str, float] = {}
    if not total:
        return out
    for name, p in (("p50_us", 50), ("p90_us", 90), ("p99_us", 99), ("p999_us", 99.9)):
        need, seen = total * p / 100, 0
        for k in sorted(bins):
            seen += bins[k]
            if seen >= need:
                out[name] = k * width_us
                break
    return out


def summarize(stdout: str) -> dict[str, Any]:
    """The final report line (the one starting at 0 with the longest span) and its histogram."""
    finals = [m for m in FINAL.finditer(stdout) if float(m.group(1)) == 0.0]
    summary: dict[str, Any] = {
        "tool": "iperf2",
        "full_round_trip": True,
        "percentile_source": None,
    }
    if not finals:
        return summary
    m = max(finals, key=lambda x: float(x.group(2)))
    seconds = float(m.group(2))
    count = int(m.group(3))
    summary.update(
        {
            "transactions": count,
            "transactions_per_s": float(m.group(8)),
            "seconds": seconds,
            "mean_us": float(m.group(4)) * 1000,
            "min_us": float(m.group(5)) * 1000,
            "max_us": float(m.group(6)) * 1000,
            "stdev_us": float(m.group(7)) * 1000,
        }
    )
    pdfs = list(PDF.finditer(stdout))
    if pdfs:
        p = pdfs[-1]
        width = float(p.group(1)) * (1000 if p.group(2) == "ms" else 1)
        bins = {int(k): int(v) for k, v in (x.split(":") for x in p.group(4).split(",") if x)}
        summary.update(histogram_percentiles(bins, width))
        summary["percentile_source"] = f"histogram {width:g} us bins (upper bounds)"
        summary["histogram"] = {"bin_width_us": width, "bins": bins}
    return summary
