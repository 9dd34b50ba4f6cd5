"""Rich progress for a campaign: an overall bar, the current run with its live rate, and one
line per finished run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from netfleet import api
from netfleet.text import plain
from netfleet.units import fmt_rate

if TYPE_CHECKING:
    from netfleet.api import Envelope, PlannedRun


def describe(run: PlannedRun) -> str:
    """One line naming the run, safe to embed in Rich markup."""
    return plain(
        f"{run.test} {run.client}→{run.server} {run.params.summary()} #{run.repeat}",
        keep_newlines=False,
    )


class RichReporter:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            refresh_per_second=2,  # enough for runs of seconds to hours; 10/s cost ~1.5 % CPU
        )
        self.overall: Any = None
        self.current: Any = None  # the cooldown line
        self.runs: dict[int, Any] = {}  # sequence → progress line of a run in flight

    def __enter__(self) -> RichReporter:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def preflight(self, message: str) -> None:
        self.console.print(f"[dim]preflight: {plain(message)}[/]")

    def campaign_started(
        self, runs: list[PlannedRun], estimate_s: float, most_s: float | None = None
    ) -> None:
        most = f", at most {most_s / 60:.1f} min" if most_s is not None else ""
        self.console.print(f"{len(runs)} runs, about {estimate_s / 60:.1f} min expected{most}")
        self.console.print(f"[dim]{plain(api.RUN_LINE_LEGEND)}[/]")
        self.overall = self.progress.add_task("campaign", total=len(runs), rate="")

    def run_started(self, run: PlannedRun) -> None:
        if self.current is not None:
            self.progress.remove_task(self.current)
            self.current = None
        total = run.params.measured_seconds()
        self.runs[run.sequence] = self.progress.add_task(describe(run), total=total, rate="")

    def run_progress(self, run: PlannedRun, elapsed_s: float, bits_per_second: float) -> None:
        task = self.runs.get(run.sequence)
        if task is not None:
            self.progress.update(task, completed=elapsed_s, rate=fmt_rate(bits_per_second))

    def run_finished(self, run: PlannedRun, envelope: Envelope, path: Path) -> None:
        task = self.runs.pop(run.sequence, None)
        if task is not None:
            self.progress.remove_task(task)
        if self.overall is not None:
            self.progress.advance(self.overall)
        if envelope.status == "ok":
            mark = "[green]ok[/]"
            rate = plain(api.run_summary(envelope), keep_newlines=False)
            adaptive = envelope.notes.get("adaptive")
            if isinstance(adaptive, dict) and adaptive.get("verdict") == "no-drop":
                rate += f" [yellow]{adaptive.get('verdict_text', '')}[/]"
        else:
            mark = f"[red]{plain(envelope.status)}[/]"
            rate = plain(envelope.reason or "", keep_newlines=False)
        self.console.print(f"{mark} {describe(run)}  {rate}", markup=True)

    def cooldown(self, seconds: float) -> None:
        if self.current is not None:
            self.progress.remove_task(self.current)
        self.current = self.progress.add_task(f"cooldown {seconds:.3g} s", total=None, rate="")

    def note(self, message: str) -> None:
        self.console.print(f"[dim]{plain(message)}[/]")
