"""Safe terminal text: user- or disk-supplied strings shown, never obeyed.

A label, a host name, a spec path or a remote tool's output may hold Rich markup (``[/]``,
``[bold]``) or terminal control sequences (``ESC ] 0 ; title BEL``, ``ESC [ 31 m``). Printed as
is, the first crashes or garbles Rich output and the second re-titles, recolours or rewrites the
user's terminal. Unicode's bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE and its kin)
make a file name read backwards (``evil\u202egpj.exe`` shows as ``evilexe.jpg``) in a terminal,
a spreadsheet or a rendered markdown table. :func:`printable` makes every C0/C1 control
character (and DEL) visible as an escape such as ``\\x1b``, and every bidi control as one such
as ``\\u202e``; :func:`plain` does that and escapes Rich markup, for text that is
embedded in a markup string. (A base module: it imports only the standard library, and Rich's
escape helper when :func:`plain` is first called: a JSON cheat sheet loads no Rich.)
"""

from __future__ import annotations

import re

#: C0 controls except newline and tab, DEL, the C1 controls (U+0080..U+009F) and the bidi
#: controls: ALM, LRM, RLM, LRE..RLO, LRI..PDI
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, keep_newlines: bool = True) -> str:
    """``text`` as a string with every control character shown as an ``\\xNN`` escape."""
    s = _CONTROLS.sub(_visible, str(text))
    if not keep_newlines:
        s = s.replace("\n", "\\n").replace("\t", "\\t")
    return s


def plain(text: object, *, keep_newlines: bool = True) -> str:
    """``text`` made printable and with Rich markup escaped: safe inside a markup string."""
    from rich.markup import escape

    return escape(printable(text, keep_newlines=keep_newlines))


def line(text: object) -> str:
    """``text`` as one line of Rich markup: control characters, newlines and markup shown, never
    obeyed — for a user- or disk-supplied string (a file name, a label) inside a line of output,
    so it can neither rewrite the terminal nor forge a line of its own."""
    return plain(text, keep_newlines=False)


_DIGITS = re.compile(r"(\d+)")


def natural_key(value: object) -> tuple[object, ...]:
    """A sort key that orders the numbers inside names by value: ``fargate-256-512`` before
    ``fargate-2048-16384``, ``c5.2xlarge`` before ``c5.12xlarge`` (None and non-text last as
    they were: compared as text)."""
    if value is None:
        return (1,)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, (1, value))
    parts = _DIGITS.split(str(value))
    return (0, (2, tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)))
