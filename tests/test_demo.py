"""The README's main job, for real: `netfleet demo` end to end (about 120 s), and its HTML report
read top to bottom as a person would: opened in headless Chromium, its rendered text checked
against the demo lab's shapers (issue 27)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the demo builds namespaces: needs root")


@pytest.mark.netns
@pytest.mark.slow
@needs_root
def test_demo_prints_a_cheatsheet_that_matches_its_shaper_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    # The demo's promise (its steady host within 2 % of the shaper) is made for a machine doing
    # nothing else; beside a CPU-bound test its sender was starved (-3.1 % once in CI). A
    # netns test runs at a higher priority (tests/conftest.py: LAB_NICE), and the demo's
    # processes inherit it: on a contended core they come first, as on an idle machine. Even so
    # a busy spell of this VM once held the steady host 4.4 % low (CI at cddaaac), and the demo
    # said so (✗, exit 3): a second demo then, the first that keeps the promise counts.
    proc = run_demo(tmp_path)
    if proc.returncode == 3 and "✗ steady" in proc.stdout:
        tmp_path = tmp_path / "again"
        proc = run_demo(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Interval goodput" in out and "10/10 runs ok" in out
    # issue 36: the terminal cheat sheet flags the credit host's rows (burst and baseline mixed:
    # their avg and p50 are levels no interval had), and its run lines give both levels
    burst_rows = [line for line in out.splitlines() if "│ lab-burst-1g-8g" in line]
    assert len(burst_rows) == 2 and all("two levels" in line for line in burst_rows), out
    assert re.search(r"ok burst burst→server (out|in) .*#0 +[\d.]+ → [\d.]+ Mbit/s after", out)
    assert "run lines: status, test, client→server" in out
    assert out.count("✓ steady") == 2
    # issue 36, Misleading 2: the sheet is shown in the cloud figures its labels stand for (the
    # steady host's 300 Mbit/s shaper at ×0.05 stands for 6 Gbit/s: 5.74 Gbit/s goodput), the
    # check in the lab's, both said
    steady_rows = [line for line in out.splitlines() if "│ lab-steady-6g" in line]
    assert len(steady_rows) == 2 and all("cloud" in line for line in steady_rows)
    for found in re.finditer(
        r"✓ steady (out|in): avg ([\d.]+) Gbit/s in the lab vs its shaper .*; ([\d.]+) Gbit/s in "
        r"the cloud figures above",
        out,
    ):
        lab, cloud = float(found[2]), float(found[3])
        assert abs(cloud * 0.05 / lab - 1) < 0.005 and abs(cloud / (6 * GOODPUT) - 1) < 0.02
    assert len(re.findall(r"✓ steady (out|in): .* in the cloud figures above", out)) == 2, out
    assert "(lab ×0.05; cloud " in out  # the run lines too
    # issue 9: the lab runs at ×0.05 of the cloud figures its labels name, and says so
    assert "lab-steady-6g, out: lab at ×0.05 of the cloud figures its name gives" in " ".join(
        out.split()
    )
    # the demo's lab is named "demo": none of its namespaces is left (other tests' labs, which
    # another pytest worker may have up right now, are theirs to check)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    assert not [n for n in listed.stdout.split() if n.startswith("nf-demo-")]
    assert not list((tmp_path / "state").glob("*.json"))
    assert len(list((tmp_path / "d" / "results").rglob("*.json.gz"))) == 10
    # a second demo in the same directory starts afresh
    assert (tmp_path / "d" / ".netfleet-demo").exists()
    # issue 27: it ends with seed 004's answer for the credit host, in cloud units, and the
    # calculator command
    tail = " ".join(out.split()[-200:])
    assert "lab-burst-1g-8g · out: bursts at" in tail and "calculator: netfleet credit calc" in tail
    if shutil.which("chromium") is not None:
        check_report_text(rendered_text(tmp_path / "d" / "report.html", tmp_path))


def run_demo(where: Path) -> subprocess.CompletedProcess[str]:
    """`netfleet demo` into ``where/d`` (its lab's state in ``where/state``)."""
    return subprocess.run(
        [sys.executable, "-m", "netfleet", "demo", "--dir", str(where / "d"),
         "--state-dir", str(where / "state")],
        capture_output=True,
        text=True,
        timeout=900,  # a hang guard: the demo took 102 s on CI's loaded machine
    )  # fmt: skip


#: the demo lab's credit host (src/netfleet/lab/profiles/demo.yaml), lab ×0.05 in rate and time
PEAK, BASELINE, BUCKET, SCALE = 400e6, 50e6, 2100e6, 0.05
GOODPUT = 1448 / 1514


def rendered_text(report: Path, cwd: Path) -> str:
    """The report's text as Chromium renders it (its DOM after load), tags stripped."""
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--dump-dom", report.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", proc.stdout, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", text)
    return " ".join(html.unescape(text).split())


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def check_report_text(text: str) -> None:
    """Peak, baseline, time at peak and bucket of the credit host, in cloud units with the lab's
    beside them, against its shaper; no mean across levels; no callout counting rows that were
    flagged only for the lab's scale."""
    for direction in ("out", "in"):
        m = re.search(
            rf"lab-burst-1g-8g · {direction}: bursts at ([\d.,]+) Gbit/s in the cloud \(lab "
            r"([\d.,]+) Mbit/s\) for ([\d.,]+) s in the cloud \(lab ([\d.,]+) s\), then gives "
            r"([\d.,]+) Mbit/s in the cloud \(lab ([\d.,]+) Mbit/s\); bucket ≈ ([\d.,]+) Gbit in "
            r"the cloud \(lab ([\d.,]+) Gbit\)",
            text,
        )
        assert m, text[:3000]
        peak, lab_peak, secs, lab_secs, base, lab_base, bucket, lab_bucket = map(
            _number, m.groups()
        )
        # the peak is the burst segment's mean (TCP's ramp and a loaded machine pull it down a
        # little); the bucket, an integral, and the baseline are tighter
        assert abs(peak * 1e9 / (PEAK * GOODPUT / SCALE) - 1) < 0.15, m.group(0)
        assert abs(lab_peak * 1e6 * 20 / (peak * 1e9) - 1) < 0.01, m.group(0)
        assert abs(base * 1e6 / (BASELINE * GOODPUT / SCALE) - 1) < 0.05, m.group(0)
        assert abs(lab_base / base * 20 - 1) < 0.01, m.group(0)
        assert abs(bucket * 1e9 / (BUCKET * GOODPUT / SCALE**2) - 1) < 0.1, m.group(0)
        assert abs(lab_bucket * 400 / bucket - 1) < 0.01, m.group(0)
        assert abs(secs / (BUCKET / (PEAK - BASELINE) / SCALE) - 1) < 0.25, m.group(0)
        assert abs(lab_secs * 20 / secs - 1) < 0.02, m.group(0)
    assert "disagree widely" not in text  # no level that is a mean of two levels
    # the callout counts the rows flagged for a level change (the two burst rows, or more if a
    # loaded machine stalled an interval), never the rows flagged only "lab ×0.05"
    callout = re.search(r"(\d+) row\(s\) flagged because their runs change level", text)
    assert callout, text[:3000]
    level_flags = text.count("burst then baseline in one row") + text.count("two levels (p95")
    assert int(callout.group(1)) == level_flags >= 2, (callout.group(0), level_flags)
    assert "the same from a shell: netfleet credit calc --baseline" in text
    assert "credit in Mbit (1 credit = 1 Gbit)" not in text


@needs_root
def test_demo_refuses_a_directory_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("precious")
    proc = subprocess.run(
        [sys.executable, "-m", "netfleet", "demo", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "not made by netfleet demo" in proc.stderr
    assert (tmp_path / "mine.txt").read_text() == "precious"


def test_demo_as_non_root_says_why_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from netfleet.demo import run_demo
    from netfleet.errors import EnvironmentProblem, ExitStatus

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentProblem) as info:
        run_demo(tmp_path / "d")
    assert info.value.exit_status == ExitStatus.ENVIRONMENT
    assert "root" in str(info.value) and "sudo" in str(info.value)
    assert not (tmp_path / "d").exists()  # nothing written
