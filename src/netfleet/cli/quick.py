"""Command lines answered before the Typer app loads (issue 26): loading Typer, Click and Rich
costs more than an import that finds nothing changed and a cached cheat sheet together.

Only command lines whose reading is certain are taken: ``--version`` alone; ``cheatsheet``
followed by its options; ``import SOURCE… --catalog CATALOG`` (by reference) with its options.
Each option written as ``--name VALUE``, ``--name=VALUE`` or ``-c VALUE`` (a short flag apart
from its value) or, for a flag, ``--name``; none given twice unless it repeats; no value
beginning with ``-``; every choice one of its choices. Anything else — ``--help``, a root
option, an unknown option, a stray argument, ``--``, ``-``, shell completion — returns None
and goes to the Typer app, which reads every command line as always. Each command ends in one
function either way (:func:`netfleet.cli.sheet.show_cheatsheet`,
:func:`netfleet.cli.registered.run_import`), so the options mean one thing; tests/test_oneproc.py
keeps these tables equal to the Typer commands' options (flags, keyword, repeatable, choices)
and the functions' defaults equal to the commands'.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2.5 ms a command)
if TYPE_CHECKING:
    from typing import Any

#: how one flag of a command is read: the keyword it sets, whether it repeats (a list of
#: values), its choices (None: any text) and whether it is a flag (no value: True) — a plain
#: tuple: a ``NamedTuple`` class costs a millisecond to define, a hundredth of the whole no-op
Option = tuple[str, bool, tuple[str, ...] | None, bool]


def _option(
    keyword: str,
    repeats: bool = False,
    choices: tuple[str, ...] | None = None,
    flag: bool = False,
) -> Option:
    return (keyword, repeats, choices, flag)


#: the output formats (``netfleet.report.OutputFormat``'s values)
FORMATS = ("table", "json", "csv", "markdown")

#: ``netfleet cheatsheet``'s options (:func:`netfleet.cli.cmd_catalog.cheatsheet`), by flag
CHEATSHEET_OPTIONS: dict[str, Option] = {
    "--catalog": _option("catalog"),
    "-c": _option("catalog"),
    "--results": _option("results"),
    "-r": _option("results"),
    "--by": _option("by"),
    "--side": _option("side", choices=("receiver", "sender")),
    "--campaign": _option("campaign"),
    "--format": _option("fmt", choices=FORMATS),
    "-f": _option("fmt", choices=FORMATS),
    "--import-from": _option("import_from", repeats=True),
    "--pattern": _option("pattern"),
    "--label": _option("label", repeats=True),
}

#: ``netfleet import``'s options (:func:`netfleet.cli.cmd_import.import_`), by flag; its
#: arguments are ``sources``
IMPORT_OPTIONS: dict[str, Option] = {
    "--results": _option("results"),
    "-r": _option("results"),
    "--campaign": _option("campaign"),
    "--label": _option("label", repeats=True),
    "--pattern": _option("pattern"),
    "--side": _option("side"),
    "--follow-links": _option("follow_links", flag=True),
    "--catalog": _option("catalog"),
    "--keep-copy": _option("keep_copy"),
}


def parse(
    args: Sequence[str], options: dict[str, Option], arguments: str | None = None
) -> dict[str, Any] | None:
    """``args`` as keyword values when each is an option of ``options`` written plainly (see
    the module's text) or, with ``arguments``, an argument (collected under that keyword);
    None when the Typer app must read them."""
    values: dict[str, Any] = {}
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if arguments is not None and token and not token.startswith("-"):
            values.setdefault(arguments, []).append(token)
            continue
        if token in options and options[token][3]:  # a flag: no value
            if options[token][0] in values:
                return None
            values[options[token][0]] = True
            continue
        if token.startswith("--") and "=" in token:
            flag, value = token.split("=", 1)
        elif token in options and rest:
            flag, value = token, rest.pop(0)
            if value.startswith("-"):  # Click would take it as the value; say so there
                return None
        else:
            return None
        option = options.get(flag)
        if option is None or option[3]:  # unknown, or a flag given a value
            return None
        keyword, repeats, choices, _ = option
        if choices is not None and value not in choices:
            return None
        if repeats:
            values.setdefault(keyword, []).append(value)
        elif keyword in values:
            return None
        else:
            values[keyword] = value
    return values


def quick_command(argv: Sequence[str]) -> Callable[[], object] | None:
    """The command ``argv`` (after the program's name) asks, to run without the Typer app, or
    None when the Typer app must read it."""
    if any(name.startswith("_NETFLEET_COMPLETE") for name in os.environ):
        return None  # shell completion: Typer's
    if list(argv) == ["--version"]:
        from netfleet import __version__

        return lambda: print(f"netfleet {__version__}")
    if list(argv[:1]) == ["cheatsheet"]:
        values = parse(argv[1:], CHEATSHEET_OPTIONS)
        if values is None:
            return None

        def cheatsheet() -> None:
            from netfleet.cli.sheet import show_cheatsheet

            show_cheatsheet(**values)

        return cheatsheet
    if list(argv[:1]) == ["import"]:
        found = parse(argv[1:], IMPORT_OPTIONS, arguments="sources")
        if found is None or "catalog" not in found or not found.get("sources"):
            return None  # an envelope import, or no source: the Typer app's

        def import_() -> None:
            from netfleet.cli.registered import run_import

            run_import(**found)

        return import_
    return None
