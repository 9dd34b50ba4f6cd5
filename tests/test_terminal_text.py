"""User and stored text is shown, never obeyed: no Rich markup, no terminal control codes
(issue 10)."""

from __future__ import annotations

import contextlib
import errno
import io

import pytest
from rich.console import Console

from netfleet.cli.boundary import guarded
from netfleet.errors import SpecError
from netfleet.report.output import OutputFormat, Tabular, render
from netfleet.text import plain, printable

HOSTILE = "\x1b]0;PWNED\x07\x1b[31mred"


def _stderr(fn) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        rc = guarded(fn)
    return rc, buf.getvalue()


def test_printable_shows_every_control_character() -> None:
    assert printable(HOSTILE) == "\\x1b]0;PWNED\\x07\\x1b[31mred"
    assert printable("a\u009bb\x7f") == "a\\x9bb\\x7f"  # C1 CSI and DEL
    assert printable("two\nlines") == "two\nlines"
    assert printable("tab\there", keep_newlines=False) == "tab\\there"
    assert plain("[/]") == "\\[/]"


@pytest.mark.parametrize(
    ("value", "shown"),
    [("[/]", "[/]"), ("[bold]x[/bold]", "[bold]x[/bold]"), ("^[a-z0-9_]{1,16}$", "[a-z0-9_]")],
)
def test_an_error_about_markup_text_shows_it_literally(value: str, shown: str) -> None:
    def fail() -> None:
        raise SpecError(
            f"{value}.yaml: invalid", file=f"{value}.yaml", problems=[("server", 3, repr(value))]
        )

    rc, err = _stderr(fail)
    assert rc == 2
    assert shown in err and "Traceback" not in err


def test_an_error_with_escape_sequences_never_reaches_the_terminal_raw() -> None:
    def fail() -> None:
        raise SpecError(f"label {HOSTILE}: invalid")

    rc, err = _stderr(fail)
    assert rc == 2
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b]0;PWNED" in err


def test_a_table_of_stored_labels_is_shown_literally() -> None:
    data = Tabular(
        columns=["[/]label", "rate"],
        rows=[["[/]", 1.0], [HOSTILE, 2.0], ["[bold]x[/bold]", 3.0]],
        title="[/]",
        notes=["[/] note"],
    )
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=False).print(render(data, OutputFormat.table))
    text = out.getvalue()
    assert "[bold]x[/bold]" in text and "[/]label" in text
    assert "\x1b" not in text and "\x07" not in text


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, "free space"),
        (errno.EROFS, "read-only"),
        (errno.EACCES, "permissions"),
    ],
)
def test_environment_faults_are_exit_4_naming_the_path(code: int, words: str) -> None:
    def fail() -> None:
        raise OSError(code, "fault", "/results/d=2026-01-01/campaign=[/]/x.json.gz")

    rc, err = _stderr(fail)
    assert rc == 4
    assert "campaign=[/]/x.json.gz" in err and words in err and "Traceback" not in err


def test_other_os_errors_stay_internal_errors() -> None:
    def fail() -> None:
        raise OSError(errno.EBADF, "bad fd")

    rc, err = _stderr(fail)
    assert rc == 1 and "internal error" in err
