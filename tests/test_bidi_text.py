"""Unicode bidirectional controls never reach the terminal, a CSV cell or a markdown table raw
(issue 37): ``evil\\u202egpj.exe`` would show as ``evilexe.jpg``. One function escapes them with
the other control characters (``netfleet/text.py``'s ``printable``), so every output format
shows ``\\u202e``."""

from __future__ import annotations

import contextlib
import io

import pytest

from netfleet.cli.options import emit
from netfleet.report.output import OutputFormat
from netfleet.tabular import Tabular
from netfleet.text import line

BIDI = ("\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u061c")
NAME = "evil\u202egpj.exe \u2067x\u2069 \u200fy"


@pytest.mark.parametrize("fmt", list(OutputFormat))
def test_no_output_format_prints_bidi_controls(fmt: OutputFormat) -> None:
    data = Tabular(columns=["file", "n"], rows=[[NAME, 1]], title=NAME, notes=[f"note {NAME}"])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        emit(data, fmt)
    text = out.getvalue() + err.getvalue()
    assert not any(c in text for c in BIDI), ascii(text)
    assert "evil\\u202egpj.exe" in text or "evil\\\\u202egpj.exe" in text


def test_a_file_name_in_a_line_of_output_shows_its_bidi_controls() -> None:
    assert line(NAME) == "evil\\u202egpj.exe \\u2067x\\u2069 \\u200fy"
