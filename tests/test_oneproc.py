"""From a folder to a printed cheat sheet in one process (issue 26): ``netfleet cheatsheet
--import-from`` prints exactly what ``netfleet import`` + ``netfleet cheatsheet`` print, reports
a bad file and exits as documented; the command lines read before the Typer app loads
(:mod:`netfleet.cli.quick`: ``cheatsheet``, ``import … --catalog``) take exactly the Typer
commands' options and print the same, and an unchanged folder's sheet loads no Typer, Click,
Rich, pydantic, DuckDB or pyarrow."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from netfleet.cli.quick import CHEATSHEET_OPTIONS, FORMATS, IMPORT_OPTIONS, parse, quick_command
from netfleet.cli.registered import run_import
from netfleet.cli.sheet import show_cheatsheet
from netfleet.errors import ExitStatus
from netfleet.report import OutputFormat
from tests.test_import_reference import RUNS, _folder
from tests.test_layers import loaded_modules

#: the fixtures' runs carry no instance type: group by their engine and side
SHEET = ["--by", "engine", "--side", "sender"]


def netfleet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The netfleet command as a user runs it (its own process: the quick path included)."""
    return subprocess.run(
        [sys.executable, "-m", "netfleet", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_one_command_prints_what_the_two_commands_print(tmp_path: Path, fmt: str) -> None:
    src = _folder(tmp_path, RUNS[:4])
    one, two = tmp_path / "one", tmp_path / "two"
    sheet = [*SHEET, "--format", fmt]
    imported = netfleet("import", str(src), "--catalog", str(two), cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    alone = netfleet("cheatsheet", "--catalog", str(two), *sheet, cwd=tmp_path)
    both = netfleet(
        "cheatsheet", "--import-from", str(src), "--catalog", str(one), *sheet, cwd=tmp_path
    )
    assert both.returncode == 0, both.stderr
    assert both.stdout == alone.stdout and "4" in both.stdout
    # the import's report on stderr: the import command's line, its catalog named
    assert both.stderr == imported.stdout.replace(str(two), str(one))
    again = netfleet(
        "cheatsheet", "--import-from", str(src), "--catalog", str(one), *sheet, cwd=tmp_path
    )
    assert again.stdout == alone.stdout
    assert again.stderr.startswith("registered 0 file(s), 4 unchanged")


def test_a_bad_file_is_reported_and_the_sheet_still_printed(tmp_path: Path) -> None:
    src = _folder(tmp_path, RUNS[:2])
    (src / "cut.json").write_text('{"start": {}, "intervals": [{"sum": {"bits_per_second": 1')
    cat = tmp_path / "cat"
    args = ["cheatsheet", "--import-from", str(src), "--catalog", str(cat), *SHEET, "-f", "json"]
    done = netfleet(*args, cwd=tmp_path)
    assert done.returncode == ExitStatus.RUNS_FAILED, done.stderr
    assert "1 not imported" in done.stderr and "cut.json" in done.stderr
    assert "truncated" in done.stderr
    sheet = json.loads(done.stdout)
    assert sheet["rows"] and "registered 2 file(s)" in done.stderr
    alone = netfleet("cheatsheet", "--catalog", str(cat), *SHEET, "-f", "json", cwd=tmp_path)
    assert alone.stdout == done.stdout


def test_no_file_imported_exits_2_and_a_stray_pattern_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "empty.json").write_bytes(b"")
    cat = str(tmp_path / "cat")
    done = netfleet("cheatsheet", "--import-from", str(src), "--catalog", cat, cwd=tmp_path)
    assert done.returncode == ExitStatus.INVALID_INPUT
    assert "empty.json" in done.stderr and "none was" in done.stderr
    stray = netfleet("cheatsheet", "--catalog", cat, "--pattern", "seed002", cwd=tmp_path)
    assert stray.returncode == ExitStatus.INVALID_INPUT and "--import-from" in stray.stderr
    # an empty source is refused, not read as the current folder
    empty = netfleet("cheatsheet", "--catalog", cat, "--import-from=", cwd=src)
    assert empty.returncode == ExitStatus.INVALID_INPUT and "empty source" in empty.stderr


def test_an_unchanged_folder_s_sheet_loads_no_heavy_library(tmp_path: Path) -> None:
    """The second run (nothing changed, the answer cached) in a fresh interpreter loads none of
    Typer, Click, Rich, pydantic, DuckDB, pyarrow or the readers: JSON needs none, and a table
    on a stdout that is not a terminal is the text drawn last time — nor ``dataclasses`` (with
    ``inspect``), OpenSSL's ``_hashlib``, ``threading`` or ``signal``."""
    src = _folder(tmp_path, RUNS[:3])
    cat = str(tmp_path / "cat")
    argv = ["cheatsheet", "--import-from", str(src), "--catalog", cat, *SHEET]
    assert netfleet(*argv, cwd=tmp_path).returncode == 0
    heavy = ("typer", "click", "pydantic", "duckdb", "pyarrow", "netfleet.engines", "msgspec")
    heavy += ("ctypes", "tempfile")  # nothing is written, no memory handed back
    heavy += ("rich",)
    # nor what its own values cost to define or key (plain classes; SHA-256 without OpenSSL)
    heavy += ("dataclasses", "inspect", "hashlib", "_hashlib")
    # nor ``threading``, ``signal``, ``glob``
    heavy += ("threading", "signal", "glob")
    again = ["import", str(src), "--catalog", cat]
    for line in ([*argv, "--format", "json"], [*argv, "--format", "table"], again):
        # stdout a pipe, as the first run's: the sheet's lines precede the modules' names
        loaded = loaded_modules(
            "import sys\nfrom netfleet.cli.main import main\n"
            f"sys.argv = ['netfleet', *{line!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code"
        )
        assert not {m for m in loaded if m.startswith(heavy)}, line


def _command_params(name: str) -> list[Any]:
    from netfleet.cli.main import load_command

    return list(load_command(name).params)


@pytest.mark.parametrize(
    ("command", "table", "function", "arguments"),
    [
        ("cheatsheet", CHEATSHEET_OPTIONS, show_cheatsheet, None),
        ("import", IMPORT_OPTIONS, run_import, "sources"),
    ],
)
def test_the_quick_options_are_the_typer_command_s(
    command: str, table: dict[str, Any], function: Any, arguments: str | None
) -> None:
    params = _command_params(command)
    flags = {}
    for param in params:
        if param.param_type_name == "argument":
            assert param.name == arguments, f"{command}: an argument the quick path cannot read"
            continue
        choices = getattr(param.type, "choices", None)
        for flag in (*param.opts, *param.secondary_opts):
            flags[flag] = (
                param.name,
                param.multiple,
                tuple(choices) if choices else None,
                param.is_flag,
            )
    assert {f: tuple(o) for f, o in table.items()} == flags
    # the defaults: the function's are the command's (a repeatable option: none given)
    defaults = inspect.signature(function).parameters
    assert set(defaults) == {p.name for p in params}
    for param in params:
        if param.param_type_name == "argument":
            assert defaults[param.name].default is inspect.Parameter.empty
            continue
        want = param.default.value if isinstance(param.default, OutputFormat) else param.default
        if param.multiple:
            want = tuple(want or ())
        assert defaults[param.name].default == want, param.name


def test_the_output_formats_are_the_renderer_s() -> None:
    assert tuple(f.value for f in OutputFormat) == FORMATS


def test_the_quick_path_reads_plain_options_and_leaves_the_rest_to_typer() -> None:
    got = parse(
        ["-c", "cat", "--by=a,b", "--import-from", "x", "--import-from=y", "-f", "json"],
        CHEATSHEET_OPTIONS,
    )
    assert got == {"catalog": "cat", "by": "a,b", "import_from": ["x", "y"], "fmt": "json"}
    assert parse(["--label", "k=v", "--label", "a=b"], CHEATSHEET_OPTIONS) == {
        "label": ["k=v", "a=b"]
    }
    for args in (
        ["--help"],
        ["--by"],  # no value
        ["--by", "--side"],  # Click takes "--side" as the value
        ["--by", "a", "--by", "b"],  # twice
        ["--side", "Sender"],  # not a choice
        ["--format", "yaml"],
        ["-ccat"],  # a short flag with its value attached
        ["--", "--by", "a"],
        ["extra"],
        ["--bogus=1"],
        ["--cat", "x"],  # Click takes no abbreviations
    ):
        assert parse(args, CHEATSHEET_OPTIONS) is None, args
    assert quick_command(["--debug", "cheatsheet"]) is None
    assert quick_command(["cheatsheet", "--help"]) is None
    assert quick_command(["cheatsheet", "-c", "x"]) is not None
    # import: by reference only, its sources as arguments, --follow-links a flag
    got = parse(["a", "--catalog", "c", "b", "--follow-links"], IMPORT_OPTIONS, "sources")
    assert got == {"sources": ["a", "b"], "catalog": "c", "follow_links": True}
    assert quick_command(["import", "a", "--catalog", "c"]) is not None
    for args in (
        ["import", "x"],  # an envelope import
        ["import", "--catalog", "c"],  # no source
        ["import", "x", "--catalog", "c", "--follow-links", "--follow-links"],
        ["import", "x", "--catalog", "c", "--follow-links=yes"],
        ["import", "-", "--catalog", "c"],
        ["import", "", "--catalog", "c"],
        ["import", "x", "--catalog", "c", "-c", "d"],  # import has no -c
    ):
        assert quick_command(args) is None, args


def test_the_quick_path_and_the_typer_app_print_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from netfleet.cli.boundary import guarded
    from netfleet.cli.main import app

    src = _folder(tmp_path, RUNS[:2])
    argv = ["cheatsheet", "--import-from", str(src), "-c", str(tmp_path / "cat"), *SHEET]
    quick = quick_command([*argv, "-f", "csv"])
    assert quick is not None
    assert guarded(quick) == 0
    by_quick = capsys.readouterr()
    assert guarded(lambda: app([*argv, "-f", "csv"], standalone_mode=False)) == 0
    by_typer = capsys.readouterr()
    assert by_quick.out == by_typer.out and by_quick.out.startswith("engine,")
    assert by_quick.err.replace("registered 2 file(s)", "registered 0 file(s), 2 unchanged") == (
        by_typer.err
    )


def test_a_drawn_sheet_is_read_back_only_under_the_same_conditions(tmp_path: Path) -> None:
    import os

    src = _folder(tmp_path, RUNS[:2])
    argv = ["cheatsheet", "--import-from", str(src), "--catalog", str(tmp_path / "cat"), *SHEET]
    first = netfleet(*argv, cwd=tmp_path)
    texts = list((tmp_path / "cat" / "_sheets").glob("text-*.txt"))
    assert len(texts) == 1 and texts[0].read_text() == first.stdout
    assert netfleet(*argv, cwd=tmp_path).stdout == first.stdout
    # another environment for Rich (colours forced): drawn again, not the plain text kept —
    # and not kept, having control sequences
    env = {**os.environ, "FORCE_COLOR": "1"}
    colour = subprocess.run(
        [sys.executable, "-m", "netfleet", *argv], capture_output=True, text=True, env=env
    )
    assert "\x1b[" in colour.stdout and colour.stdout != first.stdout
    assert list((tmp_path / "cat" / "_sheets").glob("text-*.txt")) == texts
    # a kept text that holds a control sequence is not printed: drawn again
    texts[0].write_text(first.stdout + "\x1b]0;owned\x07")
    assert netfleet(*argv, cwd=tmp_path).stdout == first.stdout
    # another answer (a new file) draws another sheet
    (src / "more.json").write_bytes(RUNS[4].read_bytes())
    os.utime(src / "more.json", ns=(0, 0))
    third = netfleet(*argv, cwd=tmp_path)
    assert third.returncode == 0 and third.stdout != first.stdout


def test_the_drawn_text_is_what_printing_the_table_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from netfleet import api
    from netfleet.cli.emit import emit
    from netfleet.cli.sheet import _draw

    src = _folder(tmp_path, RUNS[:3])
    sheet = api.cheatsheet(catalog=tmp_path / "cat", import_from=src, by="engine", side="sender")
    emit(sheet, OutputFormat.table)
    printed = capsys.readouterr().out
    assert "engine" in printed and _draw(sheet) == printed


def test_the_facade_loads_a_name_s_module_on_first_use() -> None:
    code = (
        "import sys\nimport netfleet.api as api\n"
        "before = {m for m in sys.modules if m.startswith('netfleet.api.')}\n"
        "api.cheatsheet\n"
        "after = {m for m in sys.modules if m.startswith('netfleet.api.')}\n"
        "print(sorted(before), sorted(after - before))\n"
        "assert all(getattr(api, name) is not None for name in api.__all__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[] ['netfleet.api._catalog', 'netfleet.api._paths']"


def test_an_import_by_reference_prints_the_same_either_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from netfleet.cli.boundary import guarded
    from netfleet.cli.main import app

    src = _folder(tmp_path, RUNS[:2])
    (src / "cut.json").write_text('{"start": {}, "intervals": [{"sum": {"bits_per_second": 1')
    argv = ["import", str(src), "--catalog", str(tmp_path / "one")]
    quick = quick_command(argv)
    assert quick is not None
    assert guarded(quick) == ExitStatus.RUNS_FAILED
    by_quick = capsys.readouterr()
    argv[-1] = str(tmp_path / "two")
    assert guarded(lambda: app(argv, standalone_mode=False)) == ExitStatus.RUNS_FAILED
    by_typer = capsys.readouterr()
    assert "not imported" in by_quick.out and "cut.json" in by_quick.out
    assert by_quick.out.replace(str(tmp_path / "one"), "CAT") == by_typer.out.replace(
        str(tmp_path / "two"), "CAT"
    )
