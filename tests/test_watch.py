"""``netfleet watch`` without a lab: the schedule, the baseline verdicts, the alert log and
webhook (a real HTTP server on 127.0.0.1), the OpenMetrics text (parsed with prometheus_client's
parser, scraped from the loopback endpoint) and the systemd units."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from netfleet.errors import InputError
from netfleet.watch.alerts import Webhook, alert_record, append_alerts, redact
from netfleet.watch.baseline import (
    Judgement,
    RoundValues,
    Series,
    Settings,
    judge,
    parse_threshold,
    trim,
)
from netfleet.watch.openmetrics import MetricsServer, exposition, parse_listen
from netfleet.watch.schedule import fmt_every, next_due, parse_every
from netfleet.watch.systemd import install, quote, units
from tests.hookkit import webhook_receiver

KEY = {"test": "t", "client": "a", "server": "b", "direction": "out", "instance_type": "x"}


def test_every_reads_units_and_refuses_nonsense() -> None:
    assert parse_every("6h") == 21600
    assert parse_every("30m") == 1800
    assert parse_every("1.5s") == 1.5
    assert parse_every("2d") == 172800
    assert parse_every("45") == 45
    assert fmt_every(21600) == "6h" and fmt_every(90) == "90s" and fmt_every(120) == "2min"
    for bad in ("6x", "", "-1h", "0s", "400d"):
        with pytest.raises(InputError, match="--every"):
            parse_every(bad)


def test_next_round_is_the_next_slot_and_missed_slots_are_skipped() -> None:
    assert next_due(100.0, 10.0, 100.0) == 110.0
    assert next_due(100.0, 10.0, 109.9) == 110.0
    assert next_due(100.0, 10.0, 135.0) == 140.0  # a round that overran 2 slots: no catch-up


def test_threshold_is_a_percentage() -> None:
    assert parse_threshold("10%") == pytest.approx(0.10)
    assert parse_threshold("2.5") == pytest.approx(0.025)
    for bad in ("0%", "abc", "-5%", "nan"):
        with pytest.raises(InputError, match="--threshold"):
            parse_threshold(bad)


def run_series(per_round: list[list[float]], settings: Settings) -> tuple[Series, list[Judgement]]:
    s = Series(key=KEY, metric="goodput")
    out = []
    for n, vals in enumerate(per_round, 1):
        s.rounds.append(RoundValues(round=n, values=vals))
        out.append(judge(s, settings))
        trim(s, settings)
    return s, out


def test_noise_does_not_alert_a_level_shift_does_and_returning_clears() -> None:
    rng = np.random.default_rng(3)
    settings = Settings(threshold=0.10, window=8, resamples=2000, seed=1)
    level = [100.0] * 10 + [70.0] * 6 + [100.0] * 8  # −30 % for six rounds, then back
    per_round = [[float(v * (1 + rng.normal(0, 0.03)))] for v in level]
    _, js = run_series(per_round, settings)
    events = [(n, j.event) for n, j in enumerate(js, 1) if j.event]
    assert [e for _, e in events] == ["raised", "cleared"], events
    (up, _), (down, _) = events
    assert 11 <= up <= 13  # once the recent side (3 values) is mostly shifted
    assert 17 <= down <= 19
    assert all(j.state == "building" for j in js[:3])  # no baseline before 3 values
    # during the alert the shifted rounds are not taken into the baseline
    raised = js[up - 1]
    assert raised.diff is not None and raised.diff.mean_a == pytest.approx(100, rel=0.05)


def test_a_significant_change_under_the_threshold_does_not_alert() -> None:
    settings = Settings(threshold=0.10, window=8, resamples=2000)
    rng = np.random.default_rng(5)
    level = [100.0] * 10 + [95.0] * 10  # −5 %: significant with 0.2 % noise, but small
    per_round = [[float(v * (1 + rng.normal(0, 0.002))) for _ in range(3)] for v in level]
    _, js = run_series(per_round, settings)
    first = js[10].diff  # the first shifted round against ten unshifted ones
    assert first is not None and first.different and first.verdict == "worse"  # significant…
    assert not any(j.state == "alert" for j in js)  # …but under 10 %


def test_rounds_kept_are_bounded() -> None:
    settings = Settings(window=5, resamples=1000)
    s, _ = run_series([[100.0 + n % 3] for n in range(200)], settings)
    assert len(s.rounds) <= 4 * (settings.window + 3)


@pytest.fixture
def hook_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with webhook_receiver() as hook:
        yield hook


def raised_judgement() -> Judgement:
    s = Series(key=KEY, metric="goodput")
    settings = Settings(resamples=1000)
    for n, v in enumerate([100, 101, 99, 100, 60, 61, 59], 1):
        s.rounds.append(RoundValues(round=n, values=[float(v)]))
        j = judge(s, settings)
    assert j.event == "raised"
    return j


def test_webhook_posts_the_alert_and_its_secret_stays_out_of_messages(
    hook_server: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    addr, got = hook_server
    rec = alert_record(raised_judgement(), "c", 7, "2026-11-25T00:00:00Z", Settings())
    hook = Webhook.parse(f"http://user:s3cr3t@{addr}/hook/TOKEN123?key=abc")
    assert hook.post(rec) is None
    assert got[0]["body"] == rec and got[0]["path"] == "/hook/TOKEN123?key=abc"
    assert got[0]["auth"] == "Basic " + base64.b64encode(b"user:s3cr3t").decode()
    assert hook.shown == f"http://{addr}/…"
    for bad in ("fail", "redirect"):  # an error status, a redirect not followed: a message
        err = Webhook.parse(f"http://{addr}/{bad}/TOKEN123?key=abc").post(rec)
        assert err and "TOKEN123" not in err and "abc" not in err, err
    assert len(got) == 3  # the redirect was not followed
    refused = Webhook.parse("http://127.0.0.1:1/x/TOKEN123").post(rec)  # nothing listens
    assert refused and "TOKEN123" not in refused
    append_alerts(tmp_path / "alerts.jsonl", [rec, rec])
    lines = (tmp_path / "alerts.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [rec, rec]


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "javascript:alert(1)", "http://", "x"]
)
def test_webhook_scheme_is_checked(url: str) -> None:
    with pytest.raises(InputError, match="--webhook"):
        Webhook.parse(url)


def test_redact_drops_user_path_and_query() -> None:
    assert redact("https://u:p@hooks.example/services/T/B/X?t=1#f") == "https://hooks.example/…"
    assert redact("http://[::1]:8080") == "http://[::1]:8080"


def test_openmetrics_text_parses_and_carries_the_latest_values() -> None:
    j = raised_judgement()
    other = Judgement(
        Series(key={**KEY, "client": 'we"ird\\'}, metric="rr_p50"), "building", 250.0, None
    )
    text = exposition("camp", [j, other], rounds=7, last_round_time=1.7e9)
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    good = fams["netfleet_watch_goodput_bits_per_second"]
    assert good.type == "gauge" and good.unit == "bits_per_second"
    (sample,) = good.samples
    assert sample.value == pytest.approx(59e6)  # the latest round (59), not the recent mean
    assert sample.labels == {"campaign": "camp", **KEY}
    base = fams["netfleet_watch_goodput_baseline_bits_per_second"].samples[0]
    assert base.value == pytest.approx(j.baseline * 1e6)  # type: ignore[operator]
    alerts = {s.labels["metric"]: s.value for s in fams["netfleet_watch_alert"].samples}
    assert alerts == {"goodput": 1.0, "rr_p50": 0.0}
    rr = fams["netfleet_watch_rr_p50_seconds"].samples[0]
    assert rr.value == pytest.approx(250e-6) and rr.labels["client"] == 'we"ird\\'
    assert fams["netfleet_watch_rounds"].samples[0].value == 7
    change = fams["netfleet_watch_change_ratio"].samples[0]
    assert change.value == pytest.approx(j.diff.diff_percent / 100)  # type: ignore[union-attr]


def test_metrics_endpoint_serves_on_loopback_only() -> None:
    for bad in ("0.0.0.0:9464", "198.18.0.1:80", "localhost", "127.0.0.1:x"):
        with pytest.raises(InputError, match="--metrics-listen"):
            parse_listen(bad)
    text = exposition("camp", [raised_judgement()], rounds=1, last_round_time=1.0)
    with MetricsServer(*parse_listen("127.0.0.1:0")) as server:
        server.update(text)
        url = f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as resp:
            ctype = resp.headers["Content-Type"]
            body = resp.read().decode()
    assert ctype.startswith("application/openmetrics-text")
    names = {f.name for f in text_string_to_metric_families(body)}
    assert "netfleet_watch_alert" in names


def test_systemd_units_quote_arguments_and_install_into_a_directory(tmp_path: Path) -> None:
    argv = ["/usr/bin/netfleet", "watch", "/srv/my spec.yaml", "--threshold", "10%"]
    u = units("netfleet-watch-c", argv, 21600, Path("/srv"))
    assert 'ExecStart=/usr/bin/netfleet watch "/srv/my spec.yaml" --threshold 10%%' in u.service
    assert "OnUnitActiveSec=6h" in u.timer and "WantedBy=timers.target" in u.timer
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
    with pytest.raises(InputError):
        quote("x\ny")
    with pytest.raises(InputError):
        units("bad/name", argv, 60, Path("/"))
    written = install(u, tmp_path / "units", enable=False)
    assert [p.name for p in written] == ["netfleet-watch-c.service", "netfleet-watch-c.timer"]
    assert written[0].read_text() == u.service


SPEC = """\
campaign: w
hosts:
  a: {kind: local}
  b: {kind: local}
tests:
  - {name: t, client: a, server: b, params: {duration: 1}}
"""


def test_cli_prints_units_for_one_round_a_period_and_no_webhook_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_cli import cli

    spec = tmp_path / "w.yaml"
    spec.write_text(SPEC + "watch: {every: 2h, threshold: 15%}\n")
    monkeypatch.setenv("NETFLEET_WATCH_WEBHOOK", "https://hooks.example/T/SECRET")
    assert cli("watch", str(spec), "--state", str(tmp_path / "st"), "--print-systemd") == 0
    out = capsys.readouterr().out
    assert "OnUnitActiveSec=2h" in out and "--threshold 15%%" in out
    assert f"watch {spec} --rounds 1" in out and f"--state {tmp_path / 'st'}" in out
    assert "SECRET" not in out
    assert not (tmp_path / "st").exists()  # printing runs nothing


@pytest.mark.parametrize(
    ("extra", "args", "message"),
    [
        ("", [], "no schedule"),
        ("watch: {every: 1h}\n", ["--webhook", "ftp://u:pw@h/x"], "--webhook"),
        ("watch: {every: 1h}\n", ["--threshold", "0"], "--threshold"),
        ("watch: {every: 1h}\n", ["--metrics-listen", "0.0.0.0:9464"], "--metrics-listen"),
        ("watch: {every: 1h}\n", ["--window", "2"], "--window"),
        ("watch: {every: 1 fortnight}\n", [], "watch"),
    ],
)
def test_cli_bad_settings_exit_2_before_anything_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: str,
    args: list[str],
    message: str,
) -> None:
    from tests.test_cli import cli

    monkeypatch.chdir(tmp_path)

    spec = tmp_path / "w.yaml"
    spec.write_text(SPEC + extra)
    state = tmp_path / "st"
    assert cli("watch", str(spec), "--state", str(state), "--rounds", "1", *args) == 2
    err = capsys.readouterr().err
    assert message in err and "pw" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.yaml"]  # nothing written


def test_state_of_another_campaign_or_garbage_is_refused(tmp_path: Path) -> None:
    from netfleet.watch.loop import WatchState, load_state, save_state

    save_state(tmp_path, WatchState(campaign="other", rounds=3))
    assert load_state(tmp_path, "other").rounds == 3
    with pytest.raises(InputError, match="campaign 'other'"):
        load_state(tmp_path, "mine")
    (tmp_path / "state.json").write_text('{"campaign": "mine", "rounds": -1}')
    with pytest.raises(InputError, match="not a netfleet watch state"):
        load_state(tmp_path, "mine")
