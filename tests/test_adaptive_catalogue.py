"""Issue 27.8: a steady host without ``min_duration`` no longer runs the whole ``duration``.

Real iperf3 between two namespaces of a lab, reached as plain namespaces (``namespace`` +
``address``, so the lab's shaper knowledge is not used and the hosts' burstability is unknown
unless their labels say). A steady 80 Mbit/s link, 30 s maximum: with catalogue figures on the
hosts (baseline = peak: no credits) or a ``longest_burst`` in the spec, the adaptive stop comes
early and the run says which evidence it used. Before: both waited the whole 30 s and said
"no drop within 30 s (a longer burst is possible)".
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netfleet.lab import resolve_host
from tests.labkit import lab_up, run, write_spec

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

LAB = """\
    subnet: 198.18.47.0/24
    hosts:
      srv: {}
      st:
        out: {rate: 80mbit}
    """
CATALOGUE = "{baseline_gbps: '0.08', peak_gbps: '0.08'}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with lab_up(tmp_path_factory.mktemp("lab"), LAB, prefix="ac") as made:
        yield made


def adaptive_run(tmp_path: Path, lab: tuple[str, Path], labels: str, params: str) -> Any:
    name, state = lab
    srv, st = (resolve_host(name, h, state_dir=state) for h in ("srv", "st"))
    spec = write_spec(
        tmp_path,
        f"""\
        campaign: catalogue-stop
        hosts:
          srv: {{kind: netns, namespace: {srv.namespace}, address: {srv.address}, labels: {labels}}}
          st: {{kind: netns, namespace: {st.namespace}, address: {st.address}, labels: {labels}}}
        tests:
          - {{name: a, client: st, server: srv, params: {params}}}
        """,
    )
    [env] = run(spec, tmp_path / "r", state).envelopes
    assert env.status == "ok", env.reason
    return env.notes["adaptive"], env.duration_s  # the run's own time, not the test's


def test_catalogue_figures_end_a_steady_run_early(lab: tuple[str, Path], tmp_path: Path) -> None:
    adaptive, took = adaptive_run(tmp_path, lab, CATALOGUE, "{duration: 30, until_steady: 4}")
    assert adaptive["burstability"] == "fixed"
    assert adaptive["min_duration_basis"].startswith("catalogue figures: baseline = peak")
    assert adaptive["verdict"] == "steady" and adaptive["stop"] == "steady"
    assert (
        adaptive["steady_evidence"]
        == "catalogue figures: baseline = peak (0.08 Gbit/s), no credits"
    )
    assert adaptive["stopped_at_s"] < 20 and took < 25  # not the 30 s maximum


@pytest.mark.slow  # waits the 8 s burst bound, then the steady window
def test_a_given_longest_burst_ends_a_steady_run_after_it(
    lab: tuple[str, Path], tmp_path: Path
) -> None:
    params = "{duration: 30, until_steady: 4, longest_burst: 8}"
    adaptive, took = adaptive_run(tmp_path, lab, "{}", params)
    assert adaptive["burstability"] == "unknown"
    assert adaptive["min_duration_s"] == 8
    assert "longest plausible burst given" in adaptive["min_duration_basis"]
    assert adaptive["verdict"] == "steady" and adaptive["stop"] == "steady"
    assert 8 <= adaptive["stopped_at_s"] < 20 and took < 25
    assert "longer than the longest plausible burst given (8 s)" in adaptive["steady_evidence"]
