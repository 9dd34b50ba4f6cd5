"""``netfleet watch`` in the lab, with real iperf3: 24 rounds of 1 s runs from a credit host and
a steady host. The credit host's bucket shrinks between two rounds (a ``tc qdisc replace``) and
is later restored: the watch raises an alert, then clears it; later its baseline rate drops: a
new alert, still open at the end (exit status 5). The steady host is not touched: no alert over
all rounds. The expected drops are derived from the shaper."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from netfleet import api
from netfleet.lab import Shaper
from netfleet.lab.shaping import tbf_args
from netfleet.watch.loop import ALERT_LOG, RoundResult
from tests.hookkit import webhook_receiver
from tests.labkit import lab_campaign, lab_up

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

RATE, PEAK, BUCKET, SMALL_BUCKET, LOW_RATE = 80e6, 300e6, 6e6, 1.5e6, 50e6
DURATION = 1.0
ROUNDS, SHRINK_AT, RESTORE_AT, DROP_AT = 24, 9, 15, 20


class NoWait:
    """A clock whose sleep returns at once (and records what it was asked to wait)."""

    def __init__(self) -> None:
        self.t = 1_000_000.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += max(seconds, 0)


def mean_goodput(bucket: float, rate: float = RATE) -> float:
    """A run of DURATION from a full bucket: peak while it lasts, then the base rate."""
    burst = min(DURATION, bucket * 8 / (PEAK - rate))
    return (burst * PEAK + (DURATION - burst) * rate) / DURATION


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with webhook_receiver() as receiver:
        yield receiver


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    body = f"""\
        subnet: 198.18.132.0/24
        hosts:
          srv: {{labels: {{instance_type: big}}}}
          cred:
            labels: {{instance_type: credit}}
            out: {{rate: {RATE:.0f}, peak: {PEAK:.0f}, bucket: {BUCKET:.0f}}}
          steady:
            labels: {{instance_type: steady}}
            out: {{rate: 100mbit}}
        """
    with lab_up(tmp_path, body, prefix="w") as up:
        yield up


def reshape(lab_name: str, bucket: float, rate: float = RATE) -> None:
    shaper = Shaper(rate=rate, peak=PEAK, bucket=bucket)
    subprocess.run(
        ["tc", "-n", f"nf-{lab_name}-cred", "qdisc", "replace", "dev", "eth0", "root",
         *tbf_args(shaper)],
        check=True, capture_output=True,
    )  # fmt: skip


@pytest.mark.slow
def test_a_shrunk_bucket_raises_and_clears_an_alert_and_noise_does_not(
    lab: tuple[str, Path], hook: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    name, labstate = lab
    params = f"{{duration: {DURATION}, interval: 0.5}}"
    spec = tmp_path / "w.yaml"
    hosts = {"srv": "srv", "cred": "cred", "steady": "steady"}
    spec.write_text(
        lab_campaign(
            name,
            "watched",
            hosts,
            f"""\
        tests:
          - {{name: credit, client: cred, server: srv, params: {params}}}
          - {{name: flat, client: steady, server: srv, params: {params}}}
        concurrency: 2
        allow_host_overlap: [srv]
        watch: {{every: 1s, threshold: 10%, window: 8}}
        """,
        )
    )
    expected_drop = mean_goodput(SMALL_BUCKET) / mean_goodput(BUCKET) - 1
    expected_base_drop = mean_goodput(BUCKET, LOW_RATE) / mean_goodput(BUCKET) - 1
    assert max(expected_drop, expected_base_drop) < -0.2  # well above the 10 % threshold

    shape = (BUCKET, RATE)

    def before(n: int) -> None:
        # the shape of round n, applied before every round: a tbf set again starts with a full
        # bucket, as the period's wait (1 s, not slept here: NoWait) would leave it. Without
        # it the bucket had only the gap between two rounds to refill (0.6 s needed), and once
        # runs ended sooner the gap was shorter: rounds began part-empty, and noise alerts came
        nonlocal shape
        if n == SHRINK_AT:
            shape = (SMALL_BUCKET, RATE)
        elif n == RESTORE_AT:
            shape = (BUCKET, RATE)
        elif n == DROP_AT:  # the baseline rate drops (same bucket)
            shape = (BUCKET, LOW_RATE)
        reshape(name, *shape)

    seen: list[RoundResult] = []
    scraped: list[dict[str, float]] = []

    def scrape(rr: RoundResult) -> None:  # the loopback endpoint, while the watch runs
        seen.append(rr)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            fams = text_string_to_metric_families(resp.read().decode())
        scraped.append(
            {
                s.labels["test"]: s.value
                for f in fams
                if f.name == "netfleet_watch_alert"
                for s in f.samples
            }
        )

    clock = NoWait()
    state = tmp_path / "watch"
    addr, posted = hook
    port = free_port()
    result = api.watch(
        spec, rounds=ROUNDS, state=state, results=str(tmp_path / "r"),
        catalog=tmp_path / "cat", state_dir=labstate, seed=7, clock=clock,
        before_round=before, on_round=scrape,
        webhook=f"http://watch:SECRET@{addr}/hook/TOKEN", metrics_listen=f"127.0.0.1:{port}",
    )  # fmt: skip
    assert len(seen) == ROUNDS and all(r.runs_failed == 0 for r in seen)
    # a wait before every round but the first: the clock stands still during a round here, so
    # each wait is the whole period (1 s, the spec's watch.every)
    assert clock.slept == [1.0] * (ROUNDS - 1)

    log = [json.loads(line) for line in (state / ALERT_LOG).read_text().splitlines()]
    goodput = [r for r in log if r["metric"] == "goodput"]
    assert [r["series"]["test"] for r in goodput] == ["credit"] * 3, log
    raised, cleared, raised_again = goodput
    assert [r["event"] for r in goodput] == ["alert raised", "alert cleared", "alert raised"]
    # raised once the shrunk rounds make the recent side, cleared once the restored ones do
    assert SHRINK_AT <= raised["round"] <= SHRINK_AT + 2, raised
    assert RESTORE_AT <= cleared["round"] <= RESTORE_AT + 2, cleared
    assert DROP_AT <= raised_again["round"] <= DROP_AT + 2, raised_again
    # each measured drop agrees with the shaper's prediction within a third of it
    for rec, expected in ((raised, expected_drop), (raised_again, expected_base_drop)):
        assert rec["diff_percent"] < -10 and rec["ci_high"] < 0, rec
        got = rec["diff_percent"] / 100
        assert abs(got - expected) < abs(expected) / 3, (got, expected)
    assert [p["body"] for p in posted] == log  # the webhook got each record
    assert posted[0]["auth"] is not None  # watch:SECRET@ went as Basic auth
    # the endpoint said "in alert" exactly in the rounds between raised and cleared
    in_alert = [n for n, m in enumerate(scraped, 1) if m.get("credit") == 1.0]
    assert in_alert == [
        *range(raised["round"], cleared["round"]),
        *range(raised_again["round"], ROUNDS + 1),
    ], in_alert
    assert not any(m.get("flat") for m in scraped)
    for f in state.iterdir():  # the webhook's secret is in no file the watch wrote
        assert b"SECRET" not in f.read_bytes() and b"TOKEN" not in f.read_bytes(), f
    flat = [j for r in seen for j in r.judgements if j.series.key["test"] == "flat"]
    assert flat and not any(j.state == "alert" for j in flat)
    assert result.exit_status == 5  # the second alert is still open after the last round
