"""``netfleet import``: iperf3 / iperf 2 output made elsewhere → envelopes in the results root,
or (``--catalog``) registered by reference in a catalog's manifest; ``netfleet verify``."""

from __future__ import annotations

import shlex
from typing import Annotated, Any

import typer

from netfleet import api
from netfleet.cli import registered
from netfleet.cli.console import bar_when_needed, console
from netfleet.cli.options import CatalogOpt, ResultsOpt
from netfleet.errors import InputError, PartlyDone
from netfleet.text import line


def import_(
    sources: Annotated[list[str], typer.Argument(help="files, folders or quoted globs")],
    results: ResultsOpt = None,
    campaign: Annotated[str, typer.Option(help="campaign the runs are filed under")] = "imported",
    label: Annotated[
        list[str] | None, typer.Option("--label", help="key=value label for every run")
    ] = None,
    pattern: Annotated[
        str | None,
        typer.Option(
            help="labels from the path: a preset ("
            + ", ".join(f"{k} = {v}" for k, v in api.IMPORT_PRESETS.items())
            + ") or a pattern with {name} placeholders"
        ),
    ] = None,
    side: Annotated[
        str,
        typer.Option(
            help="whose output the files are: " + "|".join(api.IMPORT_SIDES) + " (auto: iperf3 "
            "JSON and iperf2 text say it; iperf2 CSV from 'server' in the file name, else client)"
        ),
    ] = "auto",
    follow_links: Annotated[
        bool, typer.Option("--follow-links", help="read files through symbolic links")
    ] = False,
    catalog: Annotated[
        str | None,
        typer.Option(
            help="import by reference into this catalog: no envelope, one read per file, "
            "a manifest row each; sources may be s3:// prefixes"
        ),
    ] = None,
    keep_copy: Annotated[
        str | None,
        typer.Option(
            "--keep-copy",
            help="with --catalog: keep each file as it is in this folder or s3:// prefix "
            "(hardlink/reflink/copy; S3 to S3 server-side)",
        ),
    ] = None,
) -> None:
    """Import iperf3 JSON (-J or --json-stream) and iperf 2 output (-y C CSV, -e or plain text),
    client or server side, .gz or not, keeping each file's bytes untouched inside an envelope.
    Links and special files are refused unless --follow-links. With --catalog, files are
    registered by reference (docs/import.md). Exit 3 if some files could not be imported (the
    others are), 2 if none could."""
    # what both kinds of import take (api.register and api.import_files)
    common: dict[str, Any] = {
        "campaign": campaign,
        "label": label or (),
        "pattern": pattern,
        "side": side,
        "follow_links": follow_links,
    }
    if catalog is not None:
        with bar_when_needed("import") as tick:
            by_reference = api.register(
                sources, catalog=catalog, keep_copy=keep_copy, progress=tick, **common
            )
        print(registered.summary(by_reference), flush=True)
        if registered.has_details(by_reference):
            registered.details(by_reference, console)
        registered.registered_outcome(by_reference)
        return
    if keep_copy is not None:
        raise InputError(
            "--keep-copy is for an import by reference",
            hint="add --catalog DIR (an envelope import keeps the bytes in the envelope)",
        )
    with bar_when_needed("import") as tick:
        report = api.import_files(sources, results=results, progress=tick, **common)
    dups = f", {len(report.duplicates)} duplicate(s)" if report.duplicates else ""
    dups += f", {len(report.already)} already imported" if report.already else ""
    url = line(api.results_url(results))
    console.print(f"imported {len(report.imported)} file(s){dups} into {url}")
    for server, client in report.paired:
        console.print(f"  paired {line(server)} with {line(client)}: one test (iperf3 cookie)")
    registered.per_file(report, "already imported as", "notes.imported.flags", console)
    registered.outcome(report.bad, bool(report.imported or report.duplicates or report.already))


def verify(
    catalog: CatalogOpt = None,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="forget the files gone from their source: their manifest rows and runs leave "
            "the catalog (asks first; nothing on disk is deleted)",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="with --prune: list what would go, change nothing")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="with --prune: forget without asking")] = False,
) -> None:
    """Hash every file an import by reference registered again and compare with the manifest:
    changed (rewritten since: import again), corrupt (other bytes under the same stat, or
    unreadable), missing (a --keep-copy copy is checked instead; --prune forgets them). Writes
    nothing without --prune. Exit 3 when any file is not as it was imported."""
    if (dry_run or yes) and not prune:
        raise InputError("--dry-run and --yes go with --prune", hint="netfleet verify --prune")
    from netfleet.cli.console import ask_at_terminal

    report = api.verify(catalog=catalog, prune=prune, dry_run=dry_run, yes=yes,
                        ask=ask_at_terminal())  # fmt: skip
    console.print(
        f"{report.checked} file(s) of manifest generation {report.generation} hashed: "
        f"{report.ok} as imported"
    )
    for path in report.changed:
        console.print(f"  [yellow]changed[/] {line(path)}: rewritten since it was imported")
    for path, why in report.corrupt:
        console.print(f"  [red]corrupt[/] {line(path)}: {line(why)}")
    kept = set(report.kept_ok)
    pruned = set(report.pruned) if not report.dry_run else set()
    for path in report.missing:
        more = " (its kept copy holds the bytes)" if path in kept else ""
        now = "; forgotten, its run out of the catalog" if path in pruned else ""
        console.print(f"  [red]missing[/] {line(path)}: gone from its source{more}{now}")
    for path in report.gone_refused:
        now = "; forgotten" if path in pruned else ""
        console.print(
            f"  gone {line(path)}: refused when imported, it holds no run (not a problem){now}"
        )
    if report.dry_run:
        console.print(
            f"--dry-run: --prune would forget {len(report.pruned)} file(s) and take "
            f"{len(report.pruned_runs)} run(s) out of the catalog; nothing was changed"
        )
    elif prune and report.prunable and not report.pruned:
        console.print("nothing forgotten")
    elif report.pruned:
        console.print(
            f"forgot {len(report.pruned)} file(s); {len(report.pruned_runs)} run(s) taken out "
            "of the catalog (nothing on disk deleted)"
        )
    left = report.problems - (0 if report.dry_run else len(pruned & set(report.missing)))
    if left:
        fixes = []
        if report.changed or report.corrupt:
            fixes.append("import the changed sources again to catalogue what changed")
        if set(report.missing) - pruned:
            where = f" --catalog {shlex.quote(str(catalog))}" if catalog else ""
            fixes.append(
                f"forget the missing ones: netfleet verify --prune{where} (--dry-run lists them)"
            )
        raise PartlyDone(f"{left} file(s) are not as they were imported", hint="; ".join(fixes))
