"""Every file netfleet reads back from a catalog is a claim (issue 37 item 11): whoever can write
the catalog folder can leave a FIFO, 100,000-deep JSON or a sparse terabyte where netfleet's
own file was. Each is read by ``netfleet.journalfile.read_back`` (no-follow, non-blocking,
regular, size cap; deep JSON refused): no command hangs, crashes or fills memory, and a damaged
cache entry is ignored and written again. The real command runs as its own process, with a
deadline, so a hang fails the test instead of stopping the suite."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "import"
NETFLEET = Path(sys.executable).parent / "netfleet"
FILES = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")
DEEP = b"[" * 100_000 + b"]" * 100_000


#: runs the command and prints its peak RSS (KiB) on the last line of stderr
PEAK = (
    "import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
    "sys.exit(rc)"
)


def run(*args: str, timeout: float = 60) -> tuple[int, str, str, int]:
    """The command's exit status, stdout, stderr and peak RSS (KiB); TimeoutExpired if it
    hangs (the command is stopped by its process group)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PEAK, str(NETFLEET), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    err, _, peak = err.rstrip("\n").rpartition("\n")
    return proc.returncode, out, err, int(peak)


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A catalog of a few captured files imported by reference, with its cheat sheet asked
    once (so ``_sheets`` and ``_tallies`` hold entries)."""
    src = tmp_path / "src"
    src.mkdir()
    for f in FILES[:6]:
        shutil.copy(f, src / f.name)
    then = time.time_ns() - 60 * 10**9
    for p in src.iterdir():
        os.utime(p, ns=(then, then))
    cat = tmp_path / "C"
    rc, _, err, _ = run("import", str(src), "--catalog", str(cat))
    assert rc == 0, err
    rc, _, err, _ = run("cheatsheet", "--catalog", str(cat), "--by", "direction")
    assert rc == 0, err
    return cat


def sheet(cat: Path) -> tuple[int, str, str, int]:
    return run("cheatsheet", "--catalog", str(cat), "--by", "direction")


def test_fifos_in_a_catalog_never_hang_a_command(catalog: Path) -> None:
    src = catalog.parent / "src"
    expected = sheet(catalog)[1]
    ids = next((catalog / "_run_ids").iterdir())
    ids.unlink()
    os.mkfifo(ids)
    os.mkfifo(catalog / "_retire.json")
    shutil.copy(FILES[6], src / FILES[6].name)  # something to import: the retirement is read
    rc, _, err, _ = run("import", str(src), "--catalog", str(catalog), timeout=30)
    assert rc == 0, err
    assert not os.path.lexists(catalog / "_retire.json")  # not a retirement: dropped
    assert sheet(catalog)[1] != expected  # the new file's runs are in
    (catalog / "netfleet-catalog.json").unlink()
    os.mkfifo(catalog / "netfleet-catalog.json")
    shutil.copy(FILES[7], src / FILES[7].name)  # not a no-op: the catalog is written
    rc, _, err, _ = run("import", str(src), "--catalog", str(catalog), timeout=30)
    assert rc == 2, err  # a catalog error, naming the file and the fix
    assert "netfleet-catalog.json: unreadable catalog metadata (not a regular file)" in err


def test_deep_json_in_the_caches_is_ignored_and_written_again(catalog: Path) -> None:
    expected = sheet(catalog)[1]
    (state,) = (catalog / "_tallies").iterdir()
    magic = state.read_bytes()[:8]
    state.write_bytes(magic + len(DEEP).to_bytes(8, "little") + DEEP)
    entries = sorted((catalog / "_sheets").iterdir())
    for entry in entries:
        entry.write_bytes(DEEP)
    index = catalog / "_manifest_index"
    index.write_bytes(DEEP + b"\n" + index.read_bytes().partition(b"\n")[2])
    rc, out, err, _ = sheet(catalog)
    assert rc == 0 and "Traceback" not in err, err
    assert out == expected
    assert all(entry.read_bytes() != DEEP for entry in entries)  # written again
    assert DEEP not in state.read_bytes()
    rc, _, err, _ = run("import", str(catalog.parent / "src"), "--catalog", str(catalog))
    assert rc == 0 and "Traceback" not in err, err


def test_a_sparse_terabyte_cache_entry_is_never_read(catalog: Path) -> None:
    expected = sheet(catalog)[1]
    for folder in ("_sheets", "_tallies"):
        for entry in (catalog / folder).iterdir():
            with entry.open("r+b") as fh:
                fh.truncate(1 << 40)
    rc, out, err, peak_kib = sheet(catalog)
    assert rc == 0, err
    assert out == expected
    assert peak_kib < 512 * 1024, f"peak RSS {peak_kib} KiB"


def sheet_answers(catalog: Path) -> list[Path]:
    """The kept cheat sheets (beside them: the run lengths their short-run notes read)."""
    import json

    return [
        e for e in (catalog / "_sheets").iterdir() if "group_keys" in json.loads(e.read_bytes())
    ]


def test_a_cache_entry_another_user_wrote_or_renamed_is_not_believed(catalog: Path) -> None:
    def both() -> list[str]:
        return [sheet(catalog)[1], run(*SENDER, str(catalog))[1]]

    SENDER = ("cheatsheet", "--by", "direction", "--side", "sender", "--catalog")
    expected = both()
    (catalog / "_tallies").rename(catalog.parent / "tallies")  # the answers from the entries
    entries = sorted(sheet_answers(catalog), key=os.path.getmtime)
    assert len(entries) == 2  # the sheets of two questions
    for entry in entries:  # a forged number in each, as another user's file
        entry.write_bytes(entry.read_bytes().replace(b"Gbit/s", b"Gbit/s 424,242"))
        os.chown(entry, 65534, 65534)
    assert both() == expected
    assert all(e.stat().st_uid == 0 for e in entries)  # written again, root's
    answers = [e.read_bytes() for e in entries]
    for entry, held in zip(entries, answers[1:] + answers[:1], strict=True):
        entry.write_bytes(held)  # root's own entries, each under another question's name
    assert both() == expected


def test_a_fifo_at_the_watch_state_is_refused_not_waited_on(tmp_path: Path) -> None:
    from netfleet.errors import InputError
    from netfleet.watch.loop import STATE_FILE, load_state

    os.mkfifo(tmp_path / STATE_FILE)

    def hung(*_: object) -> None:
        raise TimeoutError("load_state waited on the FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)  # a hang fails this test, never the suite
    try:
        with pytest.raises(InputError, match=r"not a netfleet watch state \(not a regular file"):
            load_state(tmp_path, "camp")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_fifo_where_a_registered_file_was_never_hangs_the_stream_rows(catalog: Path) -> None:
    """Issue 37 item 6: the per-stream rows read the registered files again; one replaced by a
    FIFO (no writer) is an error naming it, not a wait for ever."""
    source = catalog.parent / "src" / FILES[0].name
    source.unlink()
    os.mkfifo(source)
    rc, _, err, _ = run(
        "sql", "select count(*) from streams", "--catalog", str(catalog), timeout=60
    )
    assert rc != 0 and "Traceback" not in err, err
    assert f"{source}: cannot read the registered file (not a regular file" in err


def test_a_kept_sheet_holding_a_rate_no_link_carries_is_computed_again(catalog: Path) -> None:
    """Issue 37 (low): a kept answer is held to the catalog's own bound (10 Tbit/s): an entry
    root owns and that names itself, but holds 424,242 Gbit/s — damaged or forged by root's
    own hand — is not printed: the sheet is computed again."""
    import json

    expected = sheet(catalog)[1]
    (catalog / "_tallies").rename(catalog.parent / "tallies")  # the answer from the entry
    (entry,) = sheet_answers(catalog)
    doc = json.loads(entry.read_bytes())
    n = len(doc["group_keys"])
    doc["rows"][0][n + 2 + 5] = 424_242_000.0  # the max, in the sheet's unit
    entry.write_text(json.dumps(doc))
    rc, out, err, _ = sheet(catalog)
    assert rc == 0, err
    assert out == expected and "424" not in out
