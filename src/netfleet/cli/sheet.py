"""``netfleet cheatsheet``'s work between its options and the terminal, and the one place that
gives those options their meaning: the Typer command (:mod:`netfleet.cli.cmd_catalog`) and the
command line read before Typer loads (:mod:`netfleet.cli.quick`) both call
:func:`show_cheatsheet` with the values as parsed.

It imports neither Typer nor Rich: Rich is loaded to draw a table (``--format table``), a
progress bar (files to read) or the files an import refused — never for a JSON, CSV or Markdown
sheet after an import that found nothing changed (issue 26).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager, nullcontext

from netfleet.errors import NetfleetError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2.5 ms a command)
if TYPE_CHECKING:
    from netfleet.api import RegisterReport, Tabular


def show_cheatsheet(
    *,
    catalog: str | None = None,
    results: str | None = None,
    by: str = "instance_type,direction",
    side: str = "receiver",
    campaign: str | None = None,
    fmt: str = "table",
    import_from: Sequence[str] = (),
    pattern: str | None = None,
    label: Sequence[str] = (),
) -> None:
    """Print the cheat sheet in ``fmt`` on stdout; with ``import_from``, import those files by
    reference first (:func:`netfleet.api.cheatsheet`), its report on stderr — the sheet on
    stdout is then exactly ``netfleet cheatsheet``'s. The exit status is the import's: 3 when
    some files were refused (listed on stderr), 2 when every file was (the sheet of what the
    catalog holds is printed either way)."""
    from netfleet import api
    from netfleet.cli.bars import bar_when_needed

    # a table on a stdout that is not a terminal: the text drawn last time when it is kept —
    # the renderers (CSV, JSON, dates) are loaded only for another format (issue 26)
    drawn_text = fmt == "table" and not sys.stdout.isatty()
    if not drawn_text:
        from netfleet.report import OutputFormat

        shown = OutputFormat(fmt)  # an unknown format fails before the import runs
    reports: list[RegisterReport] = []

    def imported(report: RegisterReport) -> None:
        reports.append(report)
        _said(report)

    with bar_when_needed("import") as tick, _without_numpy(results):
        try:
            sheet = api.cheatsheet(
                catalog=catalog,
                results=results,
                by=by,
                side=side,  # type: ignore[arg-type]  # checked by its parser: receiver | sender
                campaign=campaign,
                import_from=import_from,
                pattern=pattern,
                label=label,
                progress=tick,
                imported=imported,
            )
        except NetfleetError:  # no sheet: the import's own failure (every file refused) first
            _outcomes(reports)
            raise
    if drawn_text:
        from netfleet.api import catalog_dir
        from netfleet.report.sheettext import drawn

        sys.stdout.write(drawn(catalog_dir(catalog), sheet, _draw))
        sys.stdout.flush()
    else:
        from netfleet.cli.emit import emit

        emit(sheet, shown)
    _outcomes(reports)


def _without_numpy(results: str | None) -> ContextManager[None]:
    """NumPy kept out of the import by reference and the sheet (:func:`numpy_kept_out`):
    neither uses it, and pyarrow — loaded to write the import's rows or to read a new batch
    into the kept sheet (:mod:`netfleet.catalog.sheetstate`) — would load it (0.1 s). A
    results root's note reads the store: left as it is. Only in the ``netfleet`` command's own
    process (:func:`netfleet.cli.main.main` started it): a test or a script calling the Typer
    app in its own process keeps its pyarrow's NumPy."""
    entry = sys.modules.get("netfleet.cli.main")
    if results is None and getattr(entry, "COMMAND", False):
        return numpy_kept_out()
    return nullcontext()


@contextmanager
def numpy_kept_out() -> Iterator[None]:
    """``import numpy`` fails inside the block (as if NumPy were not installed), unless NumPy
    is loaded already; the process's modules are as before afterwards (issue 26).

    pyarrow imports NumPy whenever it is installed (``pyarrow.lib``, ``pyarrow._compute``:
    ``try: import numpy``), 0.08-0.1 s of CPU of the 0.6 s an import of 100 new files and its
    sheet took — and neither uses a single NumPy array. While the block runs,
    ``sys.modules["numpy"]`` is None, which pyarrow takes as "NumPy is not installed"; the
    entry is removed afterwards, so a later ``import numpy`` loads NumPy as always — but a
    pyarrow loaded meanwhile keeps not knowing it (``Array.to_numpy`` raises ImportError,
    ``pyarrow.array(ndarray)`` refuses the array). Only here, in the command line's own
    process: never in the library (a notebook's pyarrow needs NumPy)."""
    if "numpy" in sys.modules:  # loaded (or kept out by an outer block): nothing to do
        yield
        return
    sys.modules["numpy"] = None  # type: ignore[assignment]  # the import system's "not found"
    try:
        yield
    finally:
        if "numpy" in sys.modules and sys.modules["numpy"] is None:
            del sys.modules["numpy"]


def _draw(sheet: Tabular) -> str:
    """What printing the sheet as a table on the process's console writes."""
    from netfleet.cli.console import console
    from netfleet.report import OutputFormat, render

    with console.capture() as captured:
        console.print(render(sheet, OutputFormat.table))
    return captured.get()


def _outcomes(reports: list[RegisterReport]) -> None:
    from netfleet.cli.registered import registered_outcome

    for report in reports:
        registered_outcome(report)


def _said(report: RegisterReport) -> None:
    """The import's summary on stderr, and its files where something happened."""
    from netfleet.cli import registered

    print(registered.summary(report), file=sys.stderr)
    if registered.has_details(report):
        from rich.console import Console

        registered.details(report, Console(stderr=True, highlight=False, soft_wrap=True))
