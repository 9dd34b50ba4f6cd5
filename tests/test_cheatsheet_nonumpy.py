"""NumPy kept out of ``netfleet cheatsheet`` (issue 26, :func:`netfleet.cli.sheet.numpy_kept_out`):
the command that imports files and prints their sheet (or a sheet read from a new batch)
loads pyarrow but no NumPy, prints every format exactly as with NumPy loaded, and a later
``import numpy`` in the same process works."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.test_import_reference import RUNS, _folder
from tests.test_layers import loaded_modules
from tests.test_oneproc import SHEET


def _run(argv: list[str], numpy_first: bool) -> tuple[str, set[str]]:
    """The command's stdout (a file, as a pipe: no terminal) and the modules loaded, in a
    fresh interpreter (``numpy_first``: NumPy imported before the command, so nothing is kept
    out)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "stdout"
        loaded = loaded_modules(
            ("import numpy\n" if numpy_first else "")
            + "import os, sys\nfrom netfleet.cli.main import main\n"
            + f"sys.argv = ['netfleet', *{argv!r}]\n"
            + f"fd, kept = os.open({str(out)!r}, os.O_WRONLY | os.O_CREAT), os.dup(1)\n"
            + "os.dup2(fd, 1)\n"
            + "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code\n"
            + "sys.stdout.flush()\nos.dup2(kept, 1)\n"
        )
        return out.read_text(), loaded


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_the_import_and_its_sheet_load_no_numpy_and_print_the_same(
    tmp_path: Path, fmt: str
) -> None:
    src = _folder(tmp_path, RUNS[:3])
    printed = {}
    for numpy_first in (False, True):
        cat = tmp_path / f"cat-{numpy_first}"
        argv = ["cheatsheet", "--import-from", str(src), "--catalog", str(cat), *SHEET]
        sheet, loaded = _run([*argv, "--format", fmt], numpy_first)
        assert "pyarrow" in loaded  # the files were read and their rows written
        assert ("numpy" in loaded) is numpy_first
        printed[numpy_first] = sheet
    assert printed[False] == printed[True] and "3" in printed[False]


def test_a_sheet_with_a_results_root_is_left_alone() -> None:
    """In the command's own process, a sheet whose results root is read (the store's note) is
    as it was; every other sheet, with an import or without, keeps NumPy out."""
    code = (
        "import netfleet.cli.main as entry\n"
        "from netfleet.cli.sheet import _without_numpy\n"
        "import sys\n"
        "entry.COMMAND = True  # as main() sets it\n"
        "with _without_numpy('results'):\n    assert 'numpy' not in sys.modules\n"
        "with _without_numpy(None):\n    assert sys.modules['numpy'] is None\n"
        "assert 'numpy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_process_calling_the_app_keeps_its_numpy() -> None:
    """A test or a script calling the Typer app in its own process (main() never ran) keeps
    NumPy importable inside the sheet: a pyarrow it loads there still knows NumPy (xdist
    workers ran the suite's later pyarrow tests on a NumPy-blind pyarrow before)."""
    code = (
        "from netfleet.cli.sheet import _without_numpy\n"
        "import sys\n"
        "with _without_numpy(None):\n"
        "    assert sys.modules.get('numpy') is not None or 'numpy' not in sys.modules\n"
        "    import pyarrow as pa\n"
        "print(type(pa.array([1, 2]).to_numpy()).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "ndarray"


def test_numpy_imports_afterwards_and_pyarrow_says_it_has_none() -> None:
    """After the block ``import numpy`` works; a pyarrow loaded inside it keeps not knowing
    NumPy (why the library never does this: a notebook's pyarrow needs it)."""
    loaded = loaded_modules(
        "from netfleet.cli.sheet import numpy_kept_out\n"
        "with numpy_kept_out():\n"
        "    import pyarrow as pa\n"
        "    import pyarrow.compute, pyarrow.parquet\n"
        "    import sys\n"
        "    assert sys.modules['numpy'] is None\n"
        "import numpy as np\n"
        "assert np.arange(3).sum() == 3\n"
        "try:\n"
        "    pa.array([1, 2]).to_numpy()\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('pyarrow found NumPy')\n"
    )
    assert "numpy" in loaded and "pyarrow" in loaded


def test_numpy_loaded_before_is_left_as_it_is() -> None:
    loaded = loaded_modules(
        "import numpy\n"
        "import sys\n"
        "from netfleet.cli.sheet import numpy_kept_out\n"
        "with numpy_kept_out():\n"
        "    import pyarrow as pa\n"
        "    assert sys.modules['numpy'] is numpy\n"
        "assert pa.array([1, 2]).to_numpy().sum() == 3\n"
    )
    assert "numpy" in loaded
