"""Run hostile-corpus files through the real ``netfleet`` CLI, many cases in one process.

    python scripts/hostile_harness.py CORPUS_DIR [MEMORY_LIMIT_BYTES]

For each ``CORPUS_DIR/campaign/*.yaml`` it runs ``netfleet plan FILE`` and ``netfleet run
--dry-run FILE``; for each ``CORPUS_DIR/lab/*.yaml`` ``netfleet lab up FILE`` — through the CLI's
own entry point and error boundary, under an address-space limit (RLIMIT_AS, default 1 GiB) and a
per-case alarm. Prints one JSON line per case: file, command, exit status, seconds (wall clock),
cpu_seconds (this process's CPU time: what the case cost, apart from waiting on a busy
machine), output.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

CASE_ALARM_S = 10


class CaseTimeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise CaseTimeout(f"case took over {CASE_ALARM_S} s")


def main() -> None:
    corpus = Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from netfleet.cli.boundary import guarded
    from netfleet.cli.main import app

    signal.signal(signal.SIGALRM, _alarm)
    state = tempfile.mkdtemp(prefix="nf-hostile-")
    jobs: list[tuple[Path, list[str]]] = []
    for path in sorted((corpus / "campaign").glob("*.yaml")):
        jobs.append((path, ["plan", str(path)]))
        jobs.append((path, ["run", "--dry-run", "--results", state, str(path)]))
    for path in sorted((corpus / "lab").glob("*.yaml")):
        jobs.append((path, ["lab", "up", "--state-dir", state, str(path)]))
    for path, argv in jobs:
        out = io.StringIO()
        t0, cpu0 = time.monotonic(), time.process_time()
        signal.alarm(CASE_ALARM_S)
        try:
            with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
                rc = guarded(lambda argv=argv: app(argv, standalone_mode=False))
        except BaseException as exc:  # reported as exit -1, not hidden
            rc = -1
            out.write(f"harness: {type(exc).__name__}: {exc}")
        finally:
            signal.alarm(0)
        seconds, cpu_seconds = time.monotonic() - t0, time.process_time() - cpu0
        if rc == 0 and argv[:2] == ["lab", "up"]:  # a case that was valid after all: undo it
            with contextlib.redirect_stderr(out), contextlib.redirect_stdout(out):
                name = _lab_name(path)
                guarded(
                    lambda name=name: app(
                        ["lab", "down", "--state-dir", state, name], standalone_mode=False
                    )
                )
        rec = {"file": str(path), "cmd": argv[0] if argv[0] != "lab" else "lab up", "rc": rc}
        rec.update(seconds=round(seconds, 3), cpu_seconds=round(cpu_seconds, 3))
        rec.update(out=out.getvalue()[-4000:])
        print(json.dumps(rec), flush=True)
    shutil.rmtree(state, ignore_errors=True)


def _lab_name(path: Path) -> str:
    from netfleet.lab.profiles import load_lab

    return load_lab(str(path)).name


if __name__ == "__main__":
    main()
