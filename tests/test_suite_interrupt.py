"""The suite's own cleanup (tests/conftest.py): a pytest stopped mid-test — Ctrl-C (SIGINT) or
``kill`` (SIGTERM) — still takes down a sim lab its test left under ``tmp_path``, as a
sim-backed test's controller leaves one when ``subprocess.run`` SIGKILLs it on the interrupt.
A real lab (namespaces) held by a pytest in a subprocess, which is then signalled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from netfleet import lab

REPO = Path(__file__).resolve().parents[1]

HOLDER = textwrap.dedent("""\
    import time

    from netfleet import lab
    from netfleet.api._aio import run_sync
    from netfleet_sim import labs


    def test_runs_the_library_in_process_first():  # which leaves SIGTERM at SIG_DFL
        async def nothing():
            return 1

        assert run_sync(nothing()) == 1


    def test_holds_a_sim_lab(tmp_path):
        name, lab_dir = labs.new_lab(tmp_path / "cloud", "nf-held")
        labs.claim(lab_dir, "0" * 32, region="us-east-1", expires_at="2099-01-01T00:00:00Z")
        spec = tmp_path / f"{name}.yaml"
        spec.write_text(f"name: {name}\\nsubnet: 198.18.134.0/24\\nhosts: {{a: {{}}}}\\n")
        lab.up(lab.load_lab(spec), state_dir=lab_dir)
        print(f"\\nUP {name} {lab_dir}", flush=True)
        time.sleep(120)
    """)


def _ours(name: str) -> list[str]:
    run_netns = Path("/run/netns")
    return sorted(n for n in os.listdir(run_netns) if n.startswith(f"nf-{name}-"))


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_a_killed_pytest_takes_its_tests_sim_lab_down(tmp_path: Path) -> None:
    """SIGTERM (``kill PID``): pytest stops as on Ctrl-C (the same KeyboardInterrupt, which
    Ctrl-C's SIGINT raises anyway), the fixtures' finalizers run, the lab goes — also after an
    earlier test ran the library in process (``run_sync`` resets SIGTERM to SIG_DFL)."""
    holder = tmp_path / "test_holder.py"
    holder.write_text(HOLDER)
    argv = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
            "-q", "-s", "--basetemp", str(tmp_path / "base"), str(holder)]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, text=True)
    name, lab_dir = "", Path()
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 300  # a wait bound, not a speed claim
        while not name and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("UP "):
                name, where = line.split()[1:]
                lab_dir = Path(where)
            elif not line and proc.poll() is not None:
                break
        assert name, "the holder never brought its lab up"
        assert _ours(name), "no namespace of the lab"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
        assert _ours(name) == [], out
        assert not lab_dir.exists()
        print(f"stopped and cleaned in {time.monotonic() - t0:.1f} s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if name and _ours(name):
            lab.down(name, state_dir=lab_dir)
