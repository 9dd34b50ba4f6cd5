"""``netfleet import``'s work and what an import said, file by file, and its exit status — for
``netfleet import`` (on stdout) and ``netfleet cheatsheet --import-from`` (on stderr, the sheet
alone on stdout). The summary line of an import by reference is plain text (one that finds
nothing changed loads no Rich, issue 26); the per-file lines are Rich markup, printed on the
console given; Rich is loaded for them, a progress bar and an envelope import's lines.

:func:`run_import` is the one place that gives the import's options their meaning: the Typer
command (:mod:`netfleet.cli.cmd_import`) and the command line read before Typer loads
(:mod:`netfleet.cli.quick`: an import by reference written plainly) both call it with the
values as parsed."""

from __future__ import annotations

from collections.abc import Sequence

from netfleet.errors import InputError, PartlyDone
from netfleet.text import line, printable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2.5 ms a command)
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
    done = report.registered or report.unchanged or report.touched or report.already
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


def run_import(
    *,
    sources: Sequence[str],
    results: str | None = None,
    campaign: str = "imported",
    label: Sequence[str] = (),
    pattern: str | None = None,
    side: str = "auto",
    follow_links: bool = False,
    catalog: str | None = None,
    keep_copy: str | None = None,
) -> None:
    """Import ``sources`` (as envelopes, or by reference into ``catalog``) and say what happened
    on stdout. Exit 3 if some files could not be imported (the others are), 2 if none could."""
    from netfleet import api
    from netfleet.cli.bars import bar_when_needed

    with bar_when_needed("import") as tick:
        report = api.import_(
            list(sources),
            results=results,
            campaign=campaign,
            label=label,
            pattern=pattern,
            side=side,
            progress=tick,
            follow_links=follow_links,
            catalog=catalog,
            keep_copy=keep_copy,
        )
    if isinstance(report, api.RegisterReport):  # by reference
        print(summary(report), flush=True)
        if has_details(report):
            from netfleet.cli.console import console

            details(report, console)
        registered_outcome(report)
        return
    from netfleet.cli.console import console
    from netfleet.text import line

    dups = f", {len(report.duplicates)} duplicate(s)" if report.duplicates else ""
    dups += f", {len(report.already)} already imported" if report.already else ""
    url = line(api.results_url(results))
    console.print(f"imported {len(report.imported)} file(s){dups} into {url}")
    for server, client in report.paired:
        console.print(f"  paired {line(server)} with {line(client)}: one test (iperf3 cookie)")
    per_file(report, "already imported as", "notes.imported.flags", console)
    outcome(report.bad, bool(report.imported or report.duplicates or report.already))
