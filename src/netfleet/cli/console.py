"""The process-wide Rich consoles. Piped output gets a wide console so tables are not cut."""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)


@contextmanager
def file_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A transient ``label [bar] done/total`` line; yields the ``progress(done, total)``
    callback that ``ingest`` and ``import`` call (the total is known only once they start)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task(label, total=None)

        def tick(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield tick


def ask_at_terminal() -> Callable[[str], bool] | None:
    """A yes/no question for a person at the terminal (default no), or None when stdin is not
    a terminal — then only ``--yes`` confirms (a cloud launch on a real AWS endpoint)."""
    if not sys.stdin.isatty():
        return None
    import typer

    return lambda question: typer.confirm(question, default=False)


@contextmanager
def bar_when_needed(label: str) -> Iterator[Callable[[int, int], None]]:
    """:func:`file_bar`, shown only once there is work left (``done < total``) and on stderr
    when it is a terminal: a command that usually has nothing to build (``sql``, ``export``, a
    no-op import) prints nothing extra, and piped stderr gets no bar's empty line."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        shown: list[tuple[Any, Any]] = []  # (Progress, TaskID)
        terminal = sys.stderr.isatty()

        def tick(done: int, total: int) -> None:
            if not shown and done < total and terminal:
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

                bar = stack.enter_context(
                    Progress(
                        TextColumn(label),
                        BarColumn(),
                        MofNCompleteColumn(),
                        console=Console(stderr=True, highlight=False),
                        transient=True,
                    )
                )
                shown.append((bar, bar.add_task(label, total=total)))
            if shown:
                bar, task = shown[0]
                bar.update(task, completed=done, total=total)

        yield tick
