"""Typed domain errors and the documented exit statuses.

Every error a user can cause or meet derives from :class:`NetfleetError`. The CLI translates them
once, at its edge (``netfleet.cli.boundary``), into a message that names the fix and into the exit
status below. Library callers catch :class:`NetfleetError` (or a subclass) instead.
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit codes of the ``netfleet`` command (documented in README.md)."""

    OK = 0
    ERROR = 1  #: an unexpected internal error (a bug: please report it with --debug output)
    INVALID_INPUT = 2  #: bad spec, lab file, option or argument; nothing ran, nothing was written
    #: the campaign finished but at least one run failed (its reason is stored); an import
    #: finished but at least one file was refused (each listed with its reason)
    RUNS_FAILED = 3
    #: a host, tool, lab, permission or disk-space problem stopped the work before it began, or
    #: a worker process was killed (what was committed is kept: the same command finishes)
    ENVIRONMENT = 4
    ALERT = 5  #: netfleet watch: an alert was open after the last round (docs/watch.md)
    #: netfleet cloud selftest: resources it made may remain (the release could not verify
    #: zero): ``netfleet cloud destroy netfleet-selftest`` (docs/cloud.md)
    LEFT_RESOURCES = 6
    INTERRUPTED = 130  #: stopped by Ctrl-C / SIGTERM; completed results were kept


class NetfleetError(Exception):
    """Base of all netfleet errors. ``hint`` says how to fix it."""

    exit_status: ExitStatus = ExitStatus.ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  fix: {self.hint}"


class InputError(NetfleetError):
    """Bad user input: an option, an argument, a file that cannot be read."""

    exit_status = ExitStatus.INVALID_INPUT


def named(what: str, value: str, hint: str | None = None) -> str:
    """``value`` (a path or URL the user gave for ``what``), or an InputError when it is empty:
    an empty path is the working directory to the file system (``--catalog=`` would write a
    catalog there, ``import ""`` import the folder, catalog included), never what was meant."""
    if not value.strip():
        raise InputError(f"{what} is empty", hint=hint or f"give {what} a path, or leave it out")
    return value


class SpecError(InputError):
    """An invalid campaign spec or lab file; carries the file, field path and line."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        problems: list[tuple[str, int | None, str]] | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.file = file
        #: (field path, line or None, what is wrong and how to fix it)
        self.problems = problems or []

    def __str__(self) -> str:
        lines = [self.message]
        for path, line, what in self.problems:
            where = f"{self.file}:{line}" if self.file and line else (self.file or "")
            lines.append(f"  {where}: {path}: {what}" if where else f"  {path}: {what}")
        if self.hint:
            lines.append(f"  fix: {self.hint}")
        return "\n".join(lines)


class PartlyDone(NetfleetError):
    """The work finished, but some items were refused (each listed with its reason): the
    others were done (e.g. ``netfleet import``: the other files were imported)."""

    exit_status = ExitStatus.RUNS_FAILED


class EnvironmentProblem(NetfleetError):
    """The machine is not ready: not root, a tool missing, a namespace absent..."""

    exit_status = ExitStatus.ENVIRONMENT


class HostError(EnvironmentProblem):
    """A host cannot be reached or cannot run what it is asked to run."""


class LabError(EnvironmentProblem):
    """The lab cannot be brought up, inspected or torn down."""


class EngineError(NetfleetError):
    """An engine was misused (an option the installed version lacks) or failed to start."""

    exit_status = ExitStatus.ENVIRONMENT


class StoreError(NetfleetError):
    """The results store cannot be read or written."""

    exit_status = ExitStatus.ENVIRONMENT


class LinkRefused(StoreError):
    """A path inside a directory netfleet writes (results root, catalog, state) is a symbolic
    link, or not the kind of file netfleet made there: nothing is written or deleted through it."""


class StoreUnreachable(StoreError):
    """The store's service cannot be reached or refuses us (endpoint down, credentials
    refused): the operation stops (exit 4) instead of blaming each file in turn."""


class FormatError(StoreError):
    """A stored result has an unknown or newer format version."""


class CatalogError(NetfleetError):
    """The catalog cannot be built or queried (bad SQL, missing catalog)."""

    exit_status = ExitStatus.INVALID_INPUT
