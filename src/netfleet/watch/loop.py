"""The watch loop: run the campaign, ingest, judge every series against its baseline, write the
alert log / webhook / metrics, save the state, sleep until the next round.

The state (``STATE/state.json``: per series its recent rounds' values and whether it is in
alert) is what makes ``--rounds 1`` under a systemd timer continue where the last activation
stopped. One watch at a time per state directory (a lock file).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from netfleet.durable import atomic_write
from netfleet.errors import ExitStatus, InputError
from netfleet.readback import read_back
from netfleet.watch.alerts import alert_record, append_alerts
from netfleet.watch.baseline import (
    SERIES_KEYS,
    Judgement,
    RoundValues,
    Series,
    judge,
    trim,
)
from netfleet.watch.config import WatchConfig
from netfleet.watch.openmetrics import MetricsServer, exposition, write_metrics
from netfleet.watch.schedule import Clock, WallClock, next_due

if TYPE_CHECKING:
    from netfleet.watch.systemd import Units

#: runs a campaign coroutine to its end (``asyncio.run``; the facade passes its SIGTERM-aware one)
RunAsync = Callable[[Coroutine[Any, Any, Any]], Any]

STATE_FILE = "state.json"
#: the most bytes of a state read back (a series keeps its last rounds: kilobytes)
MAX_STATE_BYTES = 64 * 1024 * 1024
ALERT_LOG = "alerts.jsonl"
METRICS_FILE = "metrics.prom"
LOCK_FILE = ".lock"


class WatchState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    campaign: str
    rounds: int = Field(0, ge=0)
    series: list[Series] = Field(default_factory=list)


@dataclass
class RoundResult:
    round: int
    time: str
    runs_ok: int
    runs_failed: int
    judgements: list[Judgement]
    #: alert log records written this round (raised and cleared)
    alerts: list[dict[str, Any]]
    webhook_errors: list[str] = field(default_factory=list)

    @property
    def open_alerts(self) -> list[Judgement]:
        return [j for j in self.judgements if j.state == "alert"]


@dataclass
class WatchResult:
    rounds: list[RoundResult] = field(default_factory=list)
    state_dir: Path | None = None
    #: --print-systemd / --install-systemd: the units (and the files written); nothing ran
    units: Units | None = None
    installed: list[Path] = field(default_factory=list)

    @property
    def exit_status(self) -> ExitStatus:
        """5 while an alert is open after the last round, else 3 if its runs failed, else 0."""
        if not self.rounds:
            return ExitStatus.OK
        last = self.rounds[-1]
        if last.open_alerts:
            return ExitStatus.ALERT
        return ExitStatus.RUNS_FAILED if last.runs_failed else ExitStatus.OK


def load_state(state_dir: Path, campaign: str) -> WatchState:
    path = state_dir / STATE_FILE
    try:  # a link, FIFO or device there is refused, never followed or waited on
        state = WatchState.model_validate_json(read_back(path, MAX_STATE_BYTES))
    except FileNotFoundError:
        return WatchState(campaign=campaign)
    except (ValidationError, ValueError, OSError) as exc:
        raise InputError(
            f"{path}: not a netfleet watch state ({str(exc).splitlines()[0]})",
            hint="move it away to start a new baseline",
        ) from exc
    if state.campaign != campaign:
        raise InputError(
            f"{path}: the watch state of campaign {state.campaign!r}, not {campaign!r}",
            hint="give each campaign its own --state directory",
        )
    return state


def save_state(state_dir: Path, state: WatchState) -> None:
    atomic_write(state_dir / STATE_FILE, state.model_dump_json(indent=1).encode())


@contextmanager
def _locked(state_dir: Path) -> Iterator[None]:
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                f"{state_dir}: another netfleet watch is using this state directory",
                hint="wait for it, or give this one its own --state",
            ) from None
        yield
    finally:
        os.close(fd)


def _round_values(
    config: WatchConfig, run_ids: set[str]
) -> dict[tuple[tuple[tuple[str, str], ...], str], list[float]]:
    from netfleet.analysis.compare import run_values

    found = run_values(config.catalog, config.metrics, ["run_id", *SERIES_KEYS])
    out: dict[tuple[tuple[tuple[str, str], ...], str], list[float]] = {}
    for metric, recs in found.items():
        for rec in recs:
            if rec["run_id"] not in run_ids:
                continue
            key = tuple((k, "" if rec[k] is None else str(rec[k])) for k in SERIES_KEYS)
            out.setdefault((key, metric), []).append(rec["_value"])
    return out


def run_round(
    config: WatchConfig,
    state: WatchState,
    reporter: Any = None,
    run_async: RunAsync = asyncio.run,
) -> RoundResult:
    """One round: the campaign, the catalog, a judgement per series, the outputs."""
    from netfleet.catalog import ingest
    from netfleet.runner import run_campaign
    from netfleet.store import open_root

    root = open_root(config.results)
    result = run_async(run_campaign(config.spec, root, reporter, config.lab_state_dir))
    ok_ids = {e.run_id for e in result.envelopes if e.status == "ok"}
    if ok_ids:
        ingest(root, config.catalog)
    values = _round_values(config, ok_ids) if ok_ids else {}
    state.rounds += 1
    now = datetime.now(UTC)
    stamp = now.isoformat(timespec="seconds").replace("+00:00", "Z")
    by_name = {(tuple(s.key.items()), s.metric): s for s in state.series}
    judgements = []
    for (key, metric), vals in sorted(values.items()):
        series = by_name.get((key, metric))
        if series is None:
            series = Series(key=dict(key), metric=metric)
            state.series.append(series)
            by_name[(key, metric)] = series
        series.rounds.append(RoundValues(round=state.rounds, values=vals))
        judgements.append(judge(series, config.settings))
        trim(series, config.settings)
    for (key, metric), series in by_name.items():  # not measured this round: no verdict
        if (key, metric) not in values:
            judgements.append(
                Judgement(series, "alert" if series.alerting else "building", None, None)
            )
    records = [
        alert_record(j, config.spec.campaign, state.rounds, stamp, config.settings)
        for j in judgements
        if j.event
    ]
    append_alerts(config.state_dir / ALERT_LOG, records)
    errors = []
    if config.webhook:
        for rec in records:
            err = config.webhook.post(rec)
            if err:
                errors.append(err)
    save_state(config.state_dir, state)
    return RoundResult(
        state.rounds, stamp, len(ok_ids), len(result.envelopes) - len(ok_ids),
        judgements, records, errors,
    )  # fmt: skip


def watch(
    config: WatchConfig,
    *,
    clock: Clock | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
    reporter: Any = None,
    before_round: Callable[[int], None] | None = None,
    run_async: RunAsync = asyncio.run,
) -> WatchResult:
    """Run rounds every ``config.every`` seconds (``config.rounds`` of them, or until
    interrupted). ``clock`` is injectable: tests run the schedule without waiting."""
    clock = clock or WallClock()
    out = WatchResult(state_dir=config.state_dir)
    metrics_file = config.metrics_file or config.state_dir / METRICS_FILE
    with _locked(config.state_dir):
        state = load_state(config.state_dir, config.spec.campaign)
        server = MetricsServer(*config.listen) if config.listen else None
        try:
            if server:
                server.__enter__()
            start = clock.now()
            done = 0
            while config.rounds is None or done < config.rounds:
                if done:
                    clock.sleep(next_due(start, config.every, clock.now()) - clock.now())
                if before_round:
                    before_round(done + 1)
                rr = run_round(config, state, reporter, run_async)
                done += 1
                text = exposition(config.spec.campaign, rr.judgements, state.rounds, clock.now())
                write_metrics(metrics_file, text)
                if server:
                    server.update(text)
                out.rounds.append(rr)
                if on_round:
                    on_round(rr)
        finally:
            if server:
                server.__exit__(None, None, None)
    return out
