"""Refill: rate and cap from (idle time, regained credit) points — synthetic, and from the
captured lab probes (drain → idle T → burst), also in the ``phases`` shape of a credit run."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from netfleet.analysis import (
    Estimate,
    RefillPoint,
    RefillProbe,
    analyze_file,
    analyze_refill,
    estimate_refill,
    run_from_envelope,
    series_from_rows,
)
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from netfleet.store import ResultsRoot
from netfleet.units import goodput_ratio

SERIES = Path(__file__).parent / "fixtures" / "series"
MANIFEST: dict[str, Any] = json.loads((SERIES / "MANIFEST.json").read_text())
PROBES = sorted(
    (fx["client_gap_s"], name) for name, fx in MANIFEST["fixtures"].items() if "client_gap_s" in fx
)
G = 1e9


def points(pairs: list[tuple[float, float]], err: float = 0.0) -> list[RefillPoint]:
    return [RefillPoint(t, Estimate(v, err)) for t, v in pairs]


def test_a_straight_refill_gives_its_rate() -> None:
    pts = points([(600, 450 * G), (1200, 900 * G), (1800, 1350 * G)], err=10 * G)
    r = estimate_refill(pts, max_bucket=Estimate(2700 * G, 5 * G))
    assert r.kind == "linear" and r.cap is None
    assert r.rate is not None and r.rate.contains(0.75 * G)
    assert "idle longer" in r.notes[-1]


def test_seed_004_the_bucket_caps_at_its_initial_size() -> None:
    """0.75 credits/s, but 3 h idle gave no longer a burst than the first one (2700)."""
    pts = points(
        [(600, 452 * G), (1800, 1347 * G), (2400, 1806 * G), (5400, 2702 * G), (10800, 2695 * G)],
        err=10 * G,
    )
    r = estimate_refill(pts, max_bucket=Estimate(2700 * G, 10 * G))
    assert r.kind == "capped"
    assert r.cap is not None and r.cap.contains(2700 * G)
    assert r.rate is not None and r.rate.contains(0.75 * G)
    assert r.full_refill_seconds == pytest.approx(3600, rel=0.02)
    assert "matches the initial bucket" in r.notes[0]
    assert "capped" in r.comparison


def test_refill_needs_two_idle_times() -> None:
    r = estimate_refill(points([(60, 1 * G), (60, 1.1 * G)]))
    assert r.kind == "inconclusive" and "two or more idle times" in r.reason
    two = estimate_refill(points([(60, 1 * G), (120, 2 * G)]))
    assert two.kind == "linear" and "linearity is not checked" in two.notes[0]


def series(name: str) -> Any:
    run, rows = run_from_envelope(ResultsRoot.read(SERIES / f"{name}.json.gz"))
    return series_from_rows(run, rows)


def test_captured_probes_give_the_shapers_refill_rate_and_cap() -> None:
    truth = MANIFEST["refill_shaper"]
    ratio = goodput_ratio(1500)
    probes = [RefillProbe(gap, series(name)) for gap, name in PROBES]
    baseline, initial, r = analyze_refill(series("refill_drain"), probes)
    assert baseline.contains(truth["rate_bps"] * ratio)
    assert initial.contains(truth["bucket_bits"] * ratio)
    assert r.kind == "capped"
    assert r.rate is not None and r.rate.contains(truth["rate_bps"] * ratio)  # refill = baseline
    assert r.cap is not None and r.cap.contains(truth["bucket_bits"] * ratio)
    full = truth["bucket_bits"] / truth["rate_bps"]
    assert r.full_refill_seconds == pytest.approx(full, rel=0.03)
    # each probe regained ρ × idle (wire), until the cap
    for p in r.points:
        expected = min(truth["rate_bps"] * p.idle_s, truth["bucket_bits"]) * ratio
        assert p.regained.value == pytest.approx(expected, rel=0.01)


def phases_envelope() -> dict[str, Any]:
    """The separate lab runs put together in the ``credit`` engine's shape, with the measured
    idle times and no ``started_s``."""
    drain = ResultsRoot.read(SERIES / "refill_drain.json.gz")
    doc = copy.deepcopy(drain)
    phases: list[dict[str, Any]] = [{"phase": "drain", "idle_s": None, "iperf3": drain["result"]}]
    for gap, name in PROBES:
        probe = ResultsRoot.read(SERIES / f"{name}.json.gz")
        phases.append({"phase": "burst", "idle_s": gap, "status": "ok", "iperf3": probe["result"]})
    doc["result"] = {"phases": phases}
    return doc


def write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "credit.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_phases_in_the_credit_engines_shape_give_the_refill(tmp_path: Path) -> None:
    a = analyze_file(write(tmp_path, phases_envelope()))
    assert a.credit.kind == "burst"
    assert a.refill is not None and a.refill.kind == "capped"
    assert a.refill.full_refill_seconds == pytest.approx(15.0, rel=0.03)


def test_the_credit_engines_own_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Captured from ``engine: credit`` (drain, idle 4/8/25 s, burst; a live text server)."""
    truth = MANIFEST["refill_shaper"]
    ratio = goodput_ratio(1500)
    path = SERIES / "credit_phases.json.gz"
    a = analyze_file(path)
    assert a.segmentation.classification == "burst-then-baseline"
    assert a.credit.bucket is not None and a.credit.bucket.contains(truth["bucket_bits"] * ratio)
    r = a.refill
    assert r is not None and r.kind == "capped"
    assert r.rate is not None and r.rate.contains(truth["rate_bps"] * ratio)
    assert r.cap is not None and r.cap.contains(truth["bucket_bits"] * ratio)
    assert r.offset is not None and r.offset.contains(0.0)  # idle measured between data flows
    for p in r.points[:-1]:
        assert p.regained.value == pytest.approx(truth["rate_bps"] * ratio * p.idle_s, rel=0.01)
    assert guarded(lambda: app(["analyze", str(path), "-f", "json"], standalone_mode=False)) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["refill_s"] == pytest.approx(15.0, rel=0.03) and row["refill_s_err"] > 0


def test_a_failed_burst_phase_is_left_out(tmp_path: Path) -> None:
    doc = phases_envelope()
    doc["result"]["phases"][1]["status"] = "failed"
    a = analyze_file(write(tmp_path, doc))
    assert a.refill is not None and len(a.refill.points) == len(PROBES) - 1


def test_phases_without_a_drain_are_inconclusive(tmp_path: Path) -> None:
    doc = phases_envelope()
    doc["result"]["phases"] = doc["result"]["phases"][1:]
    a = analyze_file(write(tmp_path, doc))
    assert a.credit.kind == "inconclusive" and "no drain phase" in a.credit.reason
