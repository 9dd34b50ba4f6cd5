"""The library facade gives what the CLI shows, without the CLI."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import netfleet
from netfleet.errors import InputError

if TYPE_CHECKING:
    from netfleet.tabular import Tabular

DEMO = Path(netfleet.__file__).parent / "demo" / "campaign.yaml"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_plan_expands_the_demo_campaign() -> None:
    planned = netfleet.api.plan(DEMO)
    assert planned.spec.campaign == "demo"
    assert len(planned.runs) == 10  # issue 27: the credit host once per direction
    assert planned.estimated_seconds >= sum(r.params.measured_seconds() for r in planned.runs)


def test_calc_from_given_numbers() -> None:
    answers = netfleet.api.calc(
        baseline=0.75e9, peak=10e9, bucket=2700e9, use=0.6e9, burst_seconds=10, duty=0.05
    )
    by_name = {a.quantity: a for a in answers}
    every = by_name["10 s at peak C = 10 Gbit/s, once every"]
    assert every.value.value == pytest.approx(626.67, abs=0.01)


def test_calc_without_a_bucket_names_what_is_missing() -> None:
    with pytest.raises(InputError, match="missing bucket"):
        netfleet.api.calc(baseline=0.75e9, peak=10e9)


def test_run_refuses_a_cloud_campaign_above_the_spending_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cost guard is the library's, not the CLI's: a notebook or a scheduler calling
    ``api.run`` gets the same refusal, before anything is journaled or launched. (A loopback
    endpoint where nothing listens: backing sim refuses any other before the guard.)"""
    monkeypatch.setenv("NETFLEET_CLOUD_DIR", str(tmp_path / "cloud"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    shown: list[Tabular] = []
    said: list[str] = []
    with pytest.raises(InputError, match=r"exceeds --max-cost \$0\.00"):
        netfleet.api.run(
            EXAMPLES / "aws-cheatsheet.yaml",
            results=str(tmp_path / "r"),
            max_cost=0.001,
            show=shown.append,
            say=said.append,
        )
    assert shown and "4 instances" in " ".join([*shown[0].notes, shown[0].title or ""])
    # the one guard of every cloud (netfleet.cloud.guard.campaign, issue 35), from AWS's price
    # through the seam: the waves the run follows, 2 instances at once
    assert any(line.startswith("aws: 4 machines in turns (2 at once)") for line in said), said
    # --max-instances bounds the instances held at once (issue 25: the clients come in waves):
    # the server and one client need 2
    with pytest.raises(InputError, match="2 instances at once exceed --max-instances 1"):
        netfleet.api.run(EXAMPLES / "aws-cheatsheet.yaml", results=str(tmp_path / "r"),
                         max_instances=1)  # fmt: skip
    assert not (tmp_path / "cloud").exists()  # nothing journaled, nothing launched
    assert not any((tmp_path / "r").rglob("*.json*"))
    # a dry run prices the campaign and launches nothing, whatever the limit
    dry = netfleet.api.run(EXAMPLES / "aws-cheatsheet.yaml", results=str(tmp_path / "r"),
                           max_cost=0.001, dry_run=True)  # fmt: skip
    assert dry.result is None and dry.cost is not None and dry.plan is not None
    assert not dry.failed


def test_constants_the_cli_help_names_match_the_library() -> None:
    """The CLI's help names these without importing the modules that define them."""
    from netfleet.analysis.compare import METRICS
    from netfleet.cloud.journal import CLOUD_DIR_ENV
    from netfleet.store.imports import PRESETS, SIDES

    assert tuple(METRICS) == netfleet.api.COMPARE_METRICS
    assert PRESETS == netfleet.api.IMPORT_PRESETS
    assert SIDES == netfleet.api.IMPORT_SIDES
    assert CLOUD_DIR_ENV == netfleet.api.CLOUD_DIR_ENV


#: CLI command → its api function. Options that only choose how the answer is shown
#: (``--format``, ``--runs``; ``--unit`` where it only scales the table) are the CLI's own.
FACADE = {
    ("plan",): "plan",
    ("run",): "run",
    ("import",): ("import_files", "register"),  # envelopes, or --catalog: by reference
    ("ingest",): "ingest",
    ("verify",): "verify",
    ("cheatsheet",): "cheatsheet",
    ("sql",): "sql",
    ("export",): "export",
    ("analyze",): "analyze",
    ("credit", "calc"): "calc",
    ("compare",): "compare",
    ("doctor",): "doctor",
    ("demo",): "demo",
    ("watch",): "watch",
    ("schema",): "schema",
    ("report", "topology"): "report_topology",
    ("report", "loaded"): "report_loaded",
    ("report", "pps"): "report_pps",
    ("report", "advice"): "advice",
    ("advice",): "advice",  # the same command at the top level (issue 36)
    ("report", "html"): "report_html",
    ("report", "price"): "report_price",
    ("lab", "up"): "lab_up",
    ("lab", "down"): "lab_down",
    ("lab", "status"): "lab_status",
    ("lab", "profiles"): "lab_profiles",
    ("inventory", "import-terraform"): "inventory_import_terraform",
    ("inventory", "show"): "inventory_show",
    ("inventory", "check"): "inventory_check",
    ("cloud", "plan"): "cloud_plan",
    ("cloud", "up"): "cloud_up",
    ("cloud", "destroy"): "cloud_destroy",
    ("cloud", "reap"): "cloud_reap",
    ("cloud", "selftest"): "cloud_selftest",
    ("cloud", "prices", "show"): "cloud_prices",
    ("cloud", "prices", "refresh"): "cloud_prices_refresh",
}
SHOWN_ONLY = {"--format"}
SHOWN_BY = {("analyze",): {"--runs"}, ("credit", "calc"): {"--unit"}}


def test_every_command_has_its_api_function() -> None:
    from netfleet.cli.main import LAZY_COMMANDS, load_command

    def leaves(cmd: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return [path]
        return [leaf for name, sub in subs.items() for leaf in leaves(sub, (*path, name))]

    commands = {leaf for name in LAZY_COMMANDS for leaf in leaves(load_command(name), (name,))}
    assert commands == set(FACADE)
    assert all(callable(getattr(netfleet.api, fn)) for fn in _functions(FACADE.values()))


def _functions(names: Iterable[str | tuple[str, ...]]) -> list[str]:
    return [n for name in names for n in ((name,) if isinstance(name, str) else name)]


@pytest.mark.parametrize("path", sorted(FACADE), ids=" ".join)
def test_every_cli_option_is_a_keyword_of_its_api_function(path: tuple[str, ...]) -> None:
    import inspect

    from netfleet.cli.main import load_command

    cmd: Any = load_command(path[0])
    for name in path[1:]:
        cmd = cmd.commands[name]
    fns = [getattr(netfleet.api, name) for name in _functions([FACADE[path]])]
    for opt in cmd.params:
        flags = [f for f in opt.opts if f.startswith("--")]
        if not flags or flags[0] in SHOWN_ONLY | SHOWN_BY.get(path, set()):
            continue  # an argument (positional), or how the answer is shown
        name = flags[0][2:].replace("-", "_")
        # an option of a command that calls one of several functions: a keyword of one of them
        params = [p[name] for fn in fns if name in (p := inspect.signature(fn).parameters)]
        assert params, f"{' '.join(path)} {flags[0]}: no keyword {name!r} in api.{FACADE[path]}"
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), (path, name)
    assert all(fn.__doc__ for fn in fns), FACADE[path]


def test_each_function_returns_one_kind_of_report() -> None:
    """No facade function answers with one report or another (the caller branching on
    ``isinstance``): an import into a results root and one by reference are two functions."""
    import inspect
    import re

    for name in netfleet.api.__all__:
        fn = getattr(netfleet.api, name)
        if inspect.isfunction(fn):
            returned = str(inspect.signature(fn).return_annotation)
            assert len(set(re.findall(r"\w+Report\b", returned))) <= 1, (name, returned)
    assert "ImportReport" in str(inspect.signature(netfleet.api.import_files).return_annotation)
    assert "RegisterReport" in str(inspect.signature(netfleet.api.register).return_annotation)


def _terminated(code: str, settle_s: float = 0.0) -> tuple[int, str, str]:
    """Run ``code`` in a Python process, SIGTERM it once it printed ``waiting`` (after
    ``settle_s``), and return its exit code and output."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "waiting\n"
        time.sleep(settle_s)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def test_sigterm_stops_a_facade_call_like_ctrl_c(tmp_path: Path) -> None:
    """``doctor``, ``inventory_check``, ``demo`` and ``run`` run their coroutines through the
    facade: SIGTERM cancels them cleanly and surfaces as KeyboardInterrupt (exit 130 at the
    CLI), not as a CancelledError traceback."""

    code = (
        "import asyncio, sys\n"
        "from netfleet.api._aio import run_sync\n"
        "async def wait():\n"
        "    print('waiting', flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "try:\n"
        "    run_sync(wait())\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(130)\n"
    )
    rc, out, err = _terminated(code, settle_s=0.2)
    assert rc == 130 and "interrupted" in out, err


def test_a_second_sigterm_does_not_cut_the_release_short(tmp_path: Path) -> None:
    """The first SIGTERM cancels; one arriving while the cancelled call releases (a shielded
    release in a thread: a cloud instance's termination) is ignored — the release ends and the
    call surfaces as KeyboardInterrupt — and so is one arriving after the coroutine ended,
    while asyncio.run still waits for a release thread (SIG_DFL would kill the process)."""

    code = (
        "import asyncio, os, signal, sys, time\n"
        "from netfleet.api._aio import run_sync\n"
        "def release(loop):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)  # a second SIGTERM, mid-release\n"
        "    for _ in range(3):  # the loop has handled it\n"
        "        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result()\n"
        "    print('released', flush=True)\n"
        "def late():\n"
        "    while callable(signal.getsignal(signal.SIGTERM)):  # asyncio's, until it ends\n"
        "        time.sleep(0.01)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)  # after the coroutine ended\n"
        "    print('late', flush=True)\n"
        "async def wait():\n"
        "    loop = asyncio.get_running_loop()\n"
        "    try:\n"
        "        print('waiting', flush=True)\n"
        "        await asyncio.sleep(60)\n"
        "    except asyncio.CancelledError:\n"
        "        await asyncio.shield(asyncio.to_thread(release, loop))\n"
        "        loop.run_in_executor(None, late)\n"
        "        raise\n"
        "try:\n"
        "    run_sync(wait())\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(130)\n"
    )
    rc, out, err = _terminated(code)
    assert rc == 130, (rc, out, err)
    assert out.split() == ["released", "late", "interrupted"], err


def test_a_facade_call_gives_the_callers_sigterm_handler_back() -> None:
    """A library user's own SIGTERM handler is theirs again after a facade call (asyncio's
    ``remove_signal_handler`` alone would leave the default: SIGTERM would then kill them)."""
    import asyncio
    import signal

    from netfleet.api._aio import run_sync

    def mine(signum: int, frame: object) -> None:
        raise AssertionError("not called")

    before = signal.signal(signal.SIGTERM, mine)
    try:
        assert run_sync(asyncio.sleep(0, result=7)) == 7
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)
