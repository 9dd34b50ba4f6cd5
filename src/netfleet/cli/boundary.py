"""The one error boundary: domain errors become a message with the fix and a documented exit
status; ``--debug`` shows the traceback instead. Nothing is swallowed into exit 0."""

from __future__ import annotations

import errno
import sys
import traceback
from collections.abc import Callable

import typer
from rich.console import Console

from netfleet.errors import ExitStatus, NetfleetError
from netfleet.text import plain

err_console = Console(stderr=True, highlight=False, soft_wrap=True)
DEBUG = {"on": False}


def guarded(fn: Callable[[], object]) -> int:
    """Call the CLI, translating every outcome into an exit status."""
    try:
        rv = fn()
    except NetfleetError as exc:
        if DEBUG["on"]:
            traceback.print_exc()
        err_console.print(f"[bold red]error:[/] {plain(exc)}", markup=True)
        return int(exc.exit_status)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        return int(ExitStatus.INTERRUPTED)
    except typer.TyperException as exc:  # usage errors: bad option, missing argument
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            err_console.print(f"error: {plain(exc.format_message())}")
        return int(ExitStatus.INVALID_INPUT)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return int(ExitStatus.INTERRUPTED)
    except OSError as exc:
        fix = _ENV_FIXES.get(exc.errno or 0)
        if fix is None:
            raise_internal()
            return int(ExitStatus.ERROR)
        if DEBUG["on"]:
            traceback.print_exc()
        where = exc.filename or "a file netfleet was writing"
        err_console.print(
            f"[bold red]error:[/] {plain(where)}: {plain(exc.strerror or exc)}\n  fix: {fix}",
            markup=True,
        )
        return int(ExitStatus.ENVIRONMENT)
    except Exception:
        raise_internal()
        return int(ExitStatus.ERROR)
    return rv if isinstance(rv, int) else 0


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


def raise_internal() -> None:
    """Print the traceback of the exception being handled as a bug report."""
    traceback.print_exc()
    err_console.print(
        "[bold red]internal error[/]: this is a bug in netfleet — please "
        "report it with the traceback above"
    )


def exit_with(status: int) -> None:
    sys.exit(status)
