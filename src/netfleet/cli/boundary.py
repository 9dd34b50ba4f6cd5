"""The one error boundary: domain errors become a message with the fix and a documented exit
status; ``--debug`` shows the traceback instead. Nothing is swallowed into exit 0. The error
console (Rich) is made when there is something to say."""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from netfleet.errors import EnvironmentProblem, ExitStatus, NetfleetError
from netfleet.text import plain

if TYPE_CHECKING:
    from rich.console import Console

DEBUG = {"on": False}


@cache
def err_console() -> Console:
    """The console errors are printed on (stderr), made on first use."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def guarded(fn: Callable[[], object]) -> int:
    """Call the CLI, translating every outcome into an exit status."""
    try:
        rv = fn()
    except NetfleetError as exc:
        return _domain_error(exc)
    except KeyboardInterrupt:
        err_console().print("interrupted")
        return int(ExitStatus.INTERRUPTED)
    except OSError as exc:
        fix = _ENV_FIXES.get(exc.errno or 0)
        if fix is None:
            raise_internal()
            return int(ExitStatus.ERROR)
        if DEBUG["on"]:
            _traceback()
        where = exc.filename or "a file netfleet was writing"
        err_console().print(
            f"[bold red]error:[/] {plain(where)}: {plain(exc.strerror or exc)}\n  fix: {fix}",
            markup=True,
        )
        return int(ExitStatus.ENVIRONMENT)
    except Exception as exc:
        status = _typer_outcome(exc)
        lost = _worker_lost(exc) if status is None else None
        if lost is not None:
            return _domain_error(lost)
        if status is None:
            raise_internal()
            return int(ExitStatus.ERROR)
        return status
    return rv if isinstance(rv, int) else 0


def _typer_outcome(exc: Exception) -> int | None:
    """The exit status of Typer's own outcomes (exit, abort, a usage error, which is shown),
    or None when ``exc`` is none of them."""
    import typer

    if isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    if isinstance(exc, typer.Abort):
        err_console().print("aborted")
        return int(ExitStatus.INTERRUPTED)
    if isinstance(exc, typer.TyperException):  # usage errors: bad option, missing argument
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            err_console().print(f"error: {plain(exc.format_message())}")
        return int(ExitStatus.INVALID_INPUT)
    return None


def _domain_error(exc: NetfleetError) -> int:
    """A domain error's message and fix (the traceback too with ``--debug``), its status."""
    if DEBUG["on"]:
        _traceback()
    err_console().print(f"[bold red]error:[/] {plain(exc)}", markup=True)
    return int(exc.exit_status)


def _worker_lost(exc: Exception) -> EnvironmentProblem | None:
    """A process pool's loss of a worker (killed by a signal: the kernel's out-of-memory
    killer, an operator) as the environment fault it is, with its fix (every pool netfleet
    starts is a :func:`netfleet.workers.process_pool`, and what its users committed before is
    kept: a catalog's batches, a results root's envelopes); None for any other ``exc``."""
    from concurrent.futures import BrokenExecutor  # (loaded only when something failed)

    if not isinstance(exc, BrokenExecutor):
        return None
    return EnvironmentProblem(
        "a worker process of netfleet's ended abruptly (killed by a signal — the kernel's "
        "out-of-memory killer says so in `dmesg` — or it could not start), so this command "
        f"stopped ({exc})",
        hint="what was committed before is kept: run the same command again to finish (free "
        "memory first if the kernel killed it)",
    )


#: environment faults (exit 4) and how to fix each; completed results are already on disk
_ENV_FIXES = {
    errno.ENOSPC: "free space on that file system (or point --results / --catalog elsewhere), then "
    "run the same command again: what was written is kept (netfleet run: add --resume)",
    errno.EDQUOT: "free space within your quota, then run the same command again (netfleet run: "
    "add --resume)",
    errno.EROFS: "that file system is read-only: use a writable --results / --catalog directory",
    errno.EACCES: "netfleet may not write or read there: fix its permissions or choose another "
    "directory",
    errno.EPERM: "the operation is not permitted there: fix the permissions or run as root",
}


def _traceback() -> None:
    """Print the traceback of the exception being handled (``traceback`` loaded only then)."""
    import traceback

    traceback.print_exc()


def raise_internal() -> None:
    """Print the traceback of the exception being handled as a bug report."""
    _traceback()
    err_console().print(
        "[bold red]internal error[/]: this is a bug in netfleet — please "
        "report it with the traceback above"
    )


def exit_with(status: int) -> None:
    sys.exit(status)
