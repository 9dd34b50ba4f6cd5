"""`netfleet import` over worker processes: the same bytes, reports and order as the
sequential path, a bad file among good ones reported in its place, and progress counted; a
worker killed mid-import stops the command with its fix, and the same command again finishes."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netfleet.catalog.query import query
from netfleet.store import ResultsRoot
from netfleet.store import imports as imports_module
from netfleet.store.imports import import_files
from netfleet.store.sources import default_workers
from tests.sshdkit import children

FIX = Path(__file__).parent / "fixtures" / "import"
RUNS = sorted(p for p in FIX.glob("*.json") if p.name != "MANIFEST.json")


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json.gz"))}


def test_workers_write_what_the_sequential_import_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = tmp_path / "src"
    sources.mkdir()
    for path in RUNS:
        shutil.copy(path, sources / path.name)
    (sources / "broken.json").write_text('{"start": {"version": "iperf 3.12"')
    monkeypatch.setattr(imports_module, "PARALLEL_MIN", 2)
    seen: list[tuple[int, int]] = []
    got = {}
    for workers in (1, 2):
        root = tmp_path / f"r{workers}"

        def tick(done: int, total: int, workers: int = workers) -> None:
            if workers == 2:
                seen.append((done, total))

        report = import_files(
            [str(sources)],
            ResultsRoot(root),
            labels=["cloud=lab"],
            workers=workers,
            progress=tick,
        )
        got[workers] = (tree(root), report)
    (seq_files, seq), (par_files, par) = got[1], got[2]
    # byte for byte; a test's client and server file are one run (paired alike)
    assert par_files == seq_files and len(par_files) == len(RUNS) - len(seq.paired)
    assert par.paired == seq.paired and seq.paired
    assert par.imported == [
        str(tmp_path / "r2" / Path(p).relative_to(tmp_path / "r1")) for p in seq.imported
    ]
    assert par.bad == seq.bad and [Path(p).name for p, _ in par.bad] == ["broken.json"]
    assert seen == [(n, len(RUNS) + 1) for n in range(1, len(RUNS) + 2)]


def _workers_of(cli: subprocess.Popen[bytes]) -> list[int]:
    """The import's pool workers: the children of the fork server the command started."""
    servers = []
    for child in children(cli.pid):
        try:
            if b"forkserver" in Path(f"/proc/{child}/cmdline").read_bytes():
                servers.append(child)
        except OSError:
            continue
    return [worker for server in servers for worker in children(server)]


@contextlib.contextmanager
def _stopped_import(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], list[int], int]]:
    """``netfleet import --catalog`` of 1,200 files (read by workers: above the catalog's
    PARALLEL_MIN of 512), held as soon as all its workers exist: they are stopped (SIGSTOP),
    so the import cannot finish before the test acts. Yields the command, a pidfd of each
    worker then of its other children (the fork server, the resource tracker), opened while
    they were the import's — signalled and watched through these (readable once the process
    has ended), never another process under a reused PID — and the number of workers. Every
    process still running at the end is killed."""
    src = tmp_path / "src"
    src.mkdir()
    body = RUNS[0].read_bytes()
    for n in range(FILES):  # other bytes each (trailing spaces): a run each
        (src / f"f{n:04d}.json").write_bytes(body + b" " * n)
    wanted = default_workers()
    pidfds: list[int] = []
    with subprocess.Popen(_argv(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as cli:
        try:
            deadline = time.monotonic() + 60
            workers: list[int] = []
            while len(workers) < wanted:
                assert cli.poll() is None, "the import ended before its workers were seen"
                assert time.monotonic() < deadline, f"{len(workers)} of {wanted} workers in 60 s"
                workers = _workers_of(cli)
            helpers = children(cli.pid)  # its fork server and resource tracker
            pidfds = [os.pidfd_open(pid) for pid in [*workers, *helpers]]
            assert sorted(_workers_of(cli)) == sorted(workers)  # the same processes, opened
            assert sorted(children(cli.pid)) == sorted(helpers)
            for fd in pidfds[: len(workers)]:
                signal.pidfd_send_signal(fd, signal.SIGSTOP)
            yield cli, pidfds, len(workers)
        finally:
            for fd in pidfds:
                with contextlib.suppress(ProcessLookupError):  # (gone: nothing to stop)
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                os.close(fd)
            if cli.poll() is None:
                cli.kill()


FILES = 1_200


def _argv(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "netfleet", "import", str(tmp_path / "src"),
            "--catalog", str(tmp_path / "cat")]  # fmt: skip


def _left(pidfds: list[int]) -> list[int]:
    """The pidfds whose process still runs 30 s on (each readable once its process ended)."""
    deadline, left = time.monotonic() + 30, list(pidfds)
    while left and (rest := deadline - time.monotonic()) > 0:
        ended = select.select(left, [], [], rest)[0]
        left = [fd for fd in left if fd not in ended]
    return left


def _finishes(tmp_path: Path) -> None:
    """The same command again catalogs every file once."""
    again = subprocess.run(_argv(tmp_path), capture_output=True, check=False)
    assert again.returncode == 0, again.stderr.decode()
    got = query(tmp_path / "cat", "SELECT count(*), count(DISTINCT run_id) FROM runs").rows
    assert [tuple(row) for row in got] == [(FILES, FILES)]


def test_a_worker_killed_mid_import_stops_it_with_the_fix_and_the_same_command_finishes(
    tmp_path: Path,
) -> None:
    """A worker of ``netfleet import --catalog`` killed (as the kernel's out-of-memory killer
    does) is an environment fault — exit 4, the cause and the fix —, not a bug report; no
    process of the import is left, and the same command again catalogs every file once.
    (Every worker is started at once: one killed while the pool still started others left
    CPython's pool joining a worker it never stopped — a hang.)"""
    with _stopped_import(tmp_path) as (cli, pidfds, workers):
        signal.pidfd_send_signal(pidfds[0], signal.SIGKILL)
        for fd in pidfds[1:workers]:
            signal.pidfd_send_signal(fd, signal.SIGCONT)
        _out, err = cli.communicate(timeout=120)
        # nothing of the import is left: its workers, fork server and resource tracker
        left = _left(pidfds)
        assert not left, f"{len(left)} of the import's processes still run"
    text = err.decode()
    assert cli.returncode == 4, text
    assert "a worker process of netfleet's ended abruptly" in text and "fix:" in text, text
    assert "internal error" not in text and "netfleet/cli" not in text, text  # no CLI traceback
    _finishes(tmp_path)


def test_the_import_killed_leaves_no_process_behind_and_the_same_command_finishes(
    tmp_path: Path,
) -> None:
    """``netfleet import --catalog`` killed with SIGKILL (an operator's ``kill -9``, the
    out-of-memory killer choosing it) mid-import leaves none of its processes running: each
    worker ends with it, then the fork server and the resource tracker (they waited forever,
    as root, each worker holding their pipes open). The same command again catalogs every
    file once."""
    with _stopped_import(tmp_path) as (cli, pidfds, workers):
        cli.kill()  # (its own child, not yet waited for: its PID is still its own)
        cli.wait(timeout=30)
        for fd in pidfds[:workers]:  # resumed: each sees its maker has ended
            signal.pidfd_send_signal(fd, signal.SIGCONT)
        left = _left(pidfds)
        assert not left, f"{len(left)} of the killed import's processes still run"
    _finishes(tmp_path)
