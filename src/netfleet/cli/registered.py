"""What an import said, file by file, and its exit status — for ``netfleet import`` (on stdout)
and ``netfleet cheatsheet --import-from`` (on stderr, the sheet alone on stdout). The summary
line is plain text; the per-file lines are Rich markup, printed on the console given."""

from __future__ import annotations

from typing import TYPE_CHECKING

from netfleet.errors import InputError, PartlyDone
from netfleet.text import line, printable

if TYPE_CHECKING:
    from rich.console import Console

    from netfleet.api import ImportReport, RegisterReport


def summary(report: RegisterReport) -> str:
    """An import by reference in one line (control characters shown, never obeyed)."""
    parts = [f"registered {len(report.registered)} file(s)"]
    for count, what in (
        (report.unchanged, "unchanged"),
        (len(report.changed), "changed"),
        (len(report.touched), "touched (same bytes)"),
        (len(report.missing), "missing"),
        (len(report.bad), "not imported"),
        (len(report.duplicates), "duplicate(s)"),
        (len(report.already), "already in the catalog"),
        (len(report.recovered), "recovered (committed by an import that stopped)"),
    ):
        if count:
            parts.append(f"{count} {what}")
    where = printable(str(report.catalog_dir), keep_newlines=False)
    return f"{', '.join(parts)} in {where} (manifest generation {report.generation})"


def has_details(report: RegisterReport) -> bool:
    """Whether :func:`details` has lines to print."""
    return bool(
        report.changed
        or report.missing
        or report.duplicates
        or report.already
        or report.flagged
        or report.bad
    )


def details(report: RegisterReport, out: Console) -> None:
    """The files of an import by reference where something happened, one line each."""
    refused = {path for path, _ in report.bad}
    for path in report.changed:
        now = "refused now (below)" if path in refused else "a new run"
        out.print(f"  [yellow]changed[/] {line(path)}: {now}; the old one retired")
    for path in report.missing:
        out.print(f"  [yellow]missing[/] {line(path)}: gone from its source (runs kept)")
    per_file(report, "already in the catalog as", "the manifest's flags", out)


def per_file(report: ImportReport | RegisterReport, already: str, flags: str, out: Console) -> None:
    """The duplicate, flagged and refused files of an import, one line each."""
    for path, first in report.duplicates:
        out.print(f"  duplicate {line(path)}: the same run as {line(first)}")
    for path, run_id in report.already:
        out.print(f"  duplicate {line(path)}: {already} {line(run_id)}")
    for path, count in report.flagged:
        out.print(
            f"  [yellow]flagged[/] {line(path)}: {count} interval value(s) that don't add up "
            f"(see {flags})"
        )
    for path, reason in report.bad:
        out.print(f"  [red]not imported[/] {line(path)}: {line(reason)}")


def registered_outcome(report: RegisterReport) -> None:
    """:func:`outcome` of an import by reference."""
    done = (
        report.registered
        or report.unchanged
        or report.touched
        or report.already
        or report.recovered
    )
    outcome(report.bad, bool(done or report.duplicates))


def outcome(bad: list[tuple[str, str]], done: bool) -> None:
    """Exit 2 when every file was refused, 3 when some were (the others imported)."""
    if bad and not done:
        raise InputError(
            f"{len(bad)} file(s) could not be imported, none was",
            hint="the reasons are listed above",
        )
    if bad:  # exit 3: finished, some refused
        raise PartlyDone(
            f"{len(bad)} file(s) could not be imported",
            hint="the reasons are listed above; the other files were imported",
        )
