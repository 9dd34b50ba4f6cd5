"""``watch``: a campaign on a schedule, each round judged against the rolling baseline of each
series (docs/watch.md)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.api._paths import catalog_dir, results_url

if TYPE_CHECKING:
    from netfleet.runner.events import Reporter
    from netfleet.spec.models import CampaignSpec
    from netfleet.watch.config import WatchConfig
    from netfleet.watch.loop import RoundResult, WatchResult
    from netfleet.watch.schedule import Clock


def watch(
    spec: str | os.PathLike[str],
    *,
    every: str | None = None,
    rounds: int | None = None,
    threshold: str | None = None,
    window: int | None = None,
    state: str | os.PathLike[str] | None = None,
    results: str | os.PathLike[str] | None = None,
    catalog: str | os.PathLike[str] | None = None,
    webhook: str | None = None,
    metrics_file: str | os.PathLike[str] | None = None,
    metrics_listen: str | None = None,
    level: float = 0.95,
    seed: int = 0,
    state_dir: Path | None = None,
    print_systemd: bool = False,
    install_systemd: bool = False,
    unit_dir: Path | None = None,
    no_enable: bool = False,
    executable: str = "netfleet",
    clock: Clock | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
    before_round: Callable[[int], None] | None = None,
    reporter: Reporter | None = None,
) -> WatchResult:
    """Run the campaign every ``every`` (``6h``; default the spec's ``watch.every``), judge each
    round against the rolling baseline of every series (test, client, server, direction,
    instance_type, metric) with ``compare``'s statistics, and raise an alert when the change is
    significant and ≥ ``threshold`` (``10%``); a later round back within it clears it. Alerts go
    to ``STATE/alerts.jsonl``, ``webhook`` (http/https) and the OpenMetrics ``metrics_file``
    (and ``metrics_listen``, a loopback ``ADDR:PORT``). ``rounds`` bounds the loop (None: until
    interrupted); ``clock`` (``now()``, ``sleep(s)``) is injectable; ``on_round`` gets each
    :class:`~netfleet.watch.loop.RoundResult`, ``before_round`` the next round's number.

    With ``print_systemd`` / ``install_systemd`` nothing runs: the result carries the service
    and timer units (``executable watch SPEC … --rounds 1``), installed into ``unit_dir``
    (default /etc/systemd/system) and enabled unless ``no_enable``. ``state_dir`` is the lab's
    state. ``WatchResult.exit_status``: 5 while an alert is open after the last round."""
    from netfleet.api._aio import run_sync
    from netfleet.watch.loop import WatchResult
    from netfleet.watch.loop import watch as run_watch
    from netfleet.watch.systemd import SYSTEM_UNIT_DIR, install, unit_argv, units

    config = _config(
        spec, every, rounds, threshold, window, state, results, catalog, webhook,
        metrics_file, metrics_listen, level, seed, state_dir,
    )  # fmt: skip
    if print_systemd or install_systemd:
        argv = unit_argv(executable, Path(spec), config)
        unit = units(f"netfleet-watch-{config.spec.campaign}", argv, config.every, Path.cwd())
        installed = (
            install(unit, unit_dir or SYSTEM_UNIT_DIR, enable=not no_enable)
            if install_systemd
            else []
        )
        return WatchResult(state_dir=config.state_dir, units=unit, installed=installed)
    return run_watch(
        config,
        clock=clock,
        on_round=on_round,
        before_round=before_round,
        reporter=reporter,
        run_async=run_sync,
    )


def _config(
    spec_path: str | os.PathLike[str],
    every: str | None,
    rounds: int | None,
    threshold: str | None,
    window: int | None,
    state: str | os.PathLike[str] | None,
    results: str | os.PathLike[str] | None,
    catalog: str | os.PathLike[str] | None,
    webhook: str | None,
    metrics_file: str | os.PathLike[str] | None,
    metrics_listen: str | None,
    level: float,
    seed: int,
    state_dir: Path | None,
) -> WatchConfig:
    """The checked settings: the arguments over the spec's ``watch:`` block over defaults."""
    from netfleet.errors import InputError
    from netfleet.spec import load_spec
    from netfleet.watch.alerts import Webhook
    from netfleet.watch.baseline import Settings
    from netfleet.watch.config import WatchConfig
    from netfleet.watch.openmetrics import parse_listen

    spec = load_spec(Path(spec_path))
    if rounds is not None and rounds < 1:
        raise InputError(f"--rounds {rounds}: at least 1", hint="omit it to run until stopped")
    if not 0.5 <= level < 1:
        raise InputError(f"--level {level} out of range", hint="e.g. --level 0.95")
    cat = catalog_dir(catalog)
    if isinstance(cat, str):
        raise InputError(
            f"--catalog {cat}: watch keeps its catalog in a local directory",
            hint="give a directory; export it to S3 separately",
        )
    return WatchConfig(
        spec=spec,
        results=results_url(results, spec.results),
        catalog=cat,
        state_dir=Path(state) if state else Path(".netfleet-watch") / spec.campaign,
        every=_every(spec_path, spec, every),
        settings=Settings(
            threshold=_threshold(spec_path, spec, threshold),
            window=_window(spec, window),
            level=level,
            seed=seed,
        ),
        rounds=rounds,
        metrics_file=Path(metrics_file) if metrics_file else None,
        webhook=Webhook.parse(webhook) if webhook else None,
        listen=parse_listen(metrics_listen) if metrics_listen else None,
        lab_state_dir=state_dir,
    )


def _every(spec_path: str | os.PathLike[str], spec: CampaignSpec, every: str | None) -> float:
    from netfleet.errors import InputError
    from netfleet.watch.schedule import parse_every

    if every is not None:
        return parse_every(every)
    if spec.watch is None or spec.watch.every is None:
        raise InputError(
            f"{spec_path}: no schedule", hint="give --every 6h or watch: {every: 6h} in the spec"
        )
    return parse_every(spec.watch.every, f"{spec_path}: watch.every")


def _threshold(
    spec_path: str | os.PathLike[str], spec: CampaignSpec, threshold: str | None
) -> float:
    from netfleet.watch.baseline import parse_threshold

    if threshold is not None:
        return parse_threshold(threshold)
    if spec.watch is not None and spec.watch.threshold is not None:
        return parse_threshold(spec.watch.threshold, f"{spec_path}: watch.threshold")
    return 0.10


def _window(spec: CampaignSpec, window: int | None) -> int:
    from netfleet.errors import InputError

    win = window if window is not None else (spec.watch.window if spec.watch else None) or 10
    if not 3 <= win <= 1000:
        raise InputError(f"--window {win}: between 3 and 1000 rounds", hint="e.g. --window 10")
    return win
