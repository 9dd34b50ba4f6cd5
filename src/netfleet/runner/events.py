"""What the runner tells its caller while it works. The CLI draws Rich progress from these;
library users may pass their own reporter or none."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from netfleet.plan.matrix import PlannedRun
from netfleet.store.envelope import Envelope


class Reporter(Protocol):
    def campaign_started(
        self, runs: list[PlannedRun], estimate_s: float, most_s: float | None = None
    ) -> None:
        """``estimate_s``: the expected wall time, as ``plan`` says it (adaptive runs stop
        once steady, after their hosts' known bursts); ``most_s``: every run at its maximum."""

    def preflight(self, message: str) -> None: ...
    def run_started(self, run: PlannedRun) -> None: ...
    def run_progress(self, run: PlannedRun, elapsed_s: float, bits_per_second: float) -> None: ...
    def run_finished(self, run: PlannedRun, envelope: Envelope, path: Path) -> None: ...
    def cooldown(self, seconds: float) -> None: ...
    def note(self, message: str) -> None: ...


class SilentReporter:
    """A reporter that says nothing."""

    def campaign_started(
        self, runs: list[PlannedRun], estimate_s: float, most_s: float | None = None
    ) -> None:
        pass

    def preflight(self, message: str) -> None:
        pass

    def run_started(self, run: PlannedRun) -> None:
        pass

    def run_progress(self, run: PlannedRun, elapsed_s: float, bits_per_second: float) -> None:
        pass

    def run_finished(self, run: PlannedRun, envelope: Envelope, path: Path) -> None:
        pass

    def cooldown(self, seconds: float) -> None:
        pass

    def note(self, message: str) -> None:
        pass
