"""Units that cannot be misread (issue 9 case 2): bits by default, bytes only with /s, the
ambiguous bps family refused with both readings, and sane upper bounds (issue 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netfleet.units import MAX_RATE, MAX_SIZE, parse_rate, parse_size


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("300mbit", 300e6),
        ("300Mbit/s", 300e6),
        ("300Mb/s", 300e6),
        ("300M", 300e6),  # iperf3's -b counts bits
        ("300Mbits/sec", 300e6),  # as iperf3 prints it
        ("2.5gbit", 2.5e9),
        ("40MB/s", 320e6),  # bytes only with an explicit /s
        ("40MByte/s", 320e6),
        ("1e9", 1e9),
        (750_000_000, 750e6),
    ],
)
def test_rates(text: str | int, bps: float) -> None:
    assert parse_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["750mbps", "10Gbps", "64kbps", "100bps"])
def test_the_bps_family_is_refused_with_both_readings(text: str) -> None:
    with pytest.raises(ValueError, match="ambiguous") as info:
        parse_rate(text)
    message = str(info.value)
    assert "bit" in message and "B/s" in message


@pytest.mark.parametrize("text", ["300MB", "300mbyte", "3xx", "-5mbit", "0mbit", True])
def test_rates_that_are_not_rates(text: str | bool) -> None:
    with pytest.raises(ValueError):
        parse_rate(text)  # type: ignore[arg-type]


def test_upper_bounds() -> None:
    with pytest.raises(ValueError, match="check the unit"):
        parse_rate("20tbit")
    assert parse_rate(MAX_RATE) == MAX_RATE
    with pytest.raises(ValueError, match="check the unit"):
        parse_size("2000tb")
    assert parse_size(MAX_SIZE) == MAX_SIZE


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("800mb", 800e6),
        ("800MB", 800e6),
        ("512K", 512 * 1024),  # iperf3's -w 512K
        ("64kib", 65536),
        ("6750mbit", 843.75e6),
        ("2700gbit", 337.5e9),
    ],
)
def test_sizes(text: str, size: float) -> None:
    assert parse_size(text) == pytest.approx(size)


def netfleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netfleet", *args], capture_output=True, text=True, timeout=60
    )


def test_credit_calc_refuses_mbps_and_reads_iperf3_style() -> None:
    """The issue's reproduction: --baseline 750mbps printed ρ 6 Gbit/s and 675 s at peak."""
    given = ["--peak", "10gbit", "--bucket", "2700gbit"]
    bad = netfleet("credit", "calc", "--baseline", "750mbps", *given)
    assert bad.returncode == 2
    assert "750mbit" in bad.stderr and "750MB/s" in bad.stderr
    good = netfleet("credit", "calc", "--baseline", "750M", *given)
    assert good.returncode == 0, good.stderr
    assert "291.9" in good.stdout


def test_plan_shows_normalised_rates_and_the_expected_time(tmp_path: Path) -> None:
    """bitrate 300M is shown as 300 Mbit/s; a credit test's estimate is its expected time with
    the maximum beside it (it used to say 20 min for a run of about a minute)."""
    spec = tmp_path / "p.yaml"
    spec.write_text(
        "campaign: p\n"
        "hosts:\n"
        "  a: {kind: local, address: 127.0.0.1}\n"
        "  b: {kind: local, address: 127.0.0.1}\n"
        "tests:\n"
        "  - {name: t, client: a, server: b, params: {bitrate: 300M, window: 512K}}\n"
        "  - name: refill\n"
        "    engine: credit\n"
        "    client: a\n"
        "    server: b\n"
        "    params: {idle: [2, 12], until_steady: 3}\n"
    )
    done = netfleet("plan", str(spec), "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = {r["test"]: r for r in json.loads(done.stdout)["rows"]}
    assert "300.00 Mbit/s (300000000 bit/s)" in rows["t"]["normalised"]
    assert "window=524288 B" in rows["t"]["normalised"]
    credit = rows["refill"]
    assert credit["max_s"] == 600 + 14 + 2 * 600
    # idles + the drain (a phase, at least 8 intervals + 1) + a phase per idle + the drain's
    # baseline check (3 idle intervals + 5 of traffic + 1)
    assert credit["expected_s"] == 14 + max(3 + 5, 8 + 1) + 2 * (3 + 5) + (3 + 5 + 1)
