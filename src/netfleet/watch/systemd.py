"""A systemd service + timer pair that runs one watch round per activation.

``netfleet watch SPEC --every 6h --print-systemd`` prints both units; ``--install-systemd``
writes them into the unit directory and enables the timer. The service runs
``netfleet watch … --rounds 1``: the watch state (baseline, open alerts) lives in ``--state``, so
one round per activation continues where the last one stopped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from netfleet.durable import atomic_write
from netfleet.errors import EnvironmentProblem, InputError
from netfleet.watch.schedule import fmt_every

if TYPE_CHECKING:
    from netfleet.watch.config import WatchConfig

UNIT_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")


def quote(arg: str) -> str:
    """One ``ExecStart=`` word: systemd's own quoting (not a shell), ``%`` doubled (a
    specifier otherwise) and ``$`` doubled (``$VAR`` and ``${VAR}`` are expanded from the
    service's environment otherwise: a path holding ``${NETFLEET_WATCH_WEBHOOK}`` would put
    the secret on the command line)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in arg):
        raise InputError(f"{arg!r}: a control character cannot go into a systemd unit")
    arg = arg.replace("%", "%%").replace("$", "$$")
    if arg and re.fullmatch(r"[A-Za-z0-9_./:=@+,%-]+", arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _plain_path(path: Path) -> str:
    """A path setting (not a command line): no quoting, ``%`` doubled, no control chars."""
    text = str(path)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise InputError(f"{text!r}: a control character cannot go into a systemd unit")
    return text.replace("%", "%%")


@dataclass(frozen=True)
class Units:
    name: str
    service: str
    timer: str


def unit_argv(executable: str, spec_path: Path, config: WatchConfig) -> list[str]:
    """``netfleet watch`` with the config's settings, absolute paths, one round per activation.
    The webhook URL is left out (it may carry a token): the service reads it from
    ``NETFLEET_WATCH_WEBHOOK`` in its ``EnvironmentFile``."""
    s = config.settings
    argv = [
        executable, "watch", str(spec_path.absolute()), "--rounds", "1",
        "--every", fmt_every(config.every), "--threshold", f"{s.threshold * 100:g}%",
        "--window", str(s.window), "--level", f"{s.level:g}", "--seed", str(s.seed),
        "--state", str(config.state_dir.absolute()), "--catalog", str(config.catalog.absolute()),
        "--results",
        config.results if "://" in config.results else str(Path(config.results).absolute()),
    ]  # fmt: skip
    if config.metrics_file:
        argv += ["--metrics-file", str(config.metrics_file.absolute())]
    if config.lab_state_dir:
        argv += ["--state-dir", str(config.lab_state_dir.absolute())]
    return argv


def units(name: str, command: Sequence[str], every: float, workdir: Path) -> Units:
    """The ``NAME.service`` and ``NAME.timer`` texts for ``command`` (argv) every ``every`` s."""
    if not UNIT_NAME.match(name):
        raise InputError(f"systemd unit name {name!r}", hint="letters, digits, '_', '.', ':', '-'")
    exec_start = " ".join(quote(a) for a in command)
    span = fmt_every(every)
    service = (
        "[Unit]\n"
        f"Description=netfleet watch round ({name})\n"
        "Wants=network-online.target\nAfter=network-online.target\n\n"
        "[Service]\nType=oneshot\n"
        "# the webhook URL (it may hold a token): NETFLEET_WATCH_WEBHOOK=… here, mode 0600\n"
        f"EnvironmentFile=-/etc/netfleet/{name}.env\n"
        f"WorkingDirectory={_plain_path(workdir)}\n"
        f"ExecStart={exec_start}\n"
        "# exit 5 = an alert is open: the unit shows as failed until it clears (OnFailure= hooks)\n"
    )
    timer = (
        "[Unit]\n"
        f"Description=netfleet watch every {span} ({name})\n\n"
        "[Timer]\n"
        f"OnBootSec={span}\nOnUnitActiveSec={span}\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )
    return Units(name, service, timer)


def install(u: Units, unit_dir: Path, *, enable: bool = True) -> list[Path]:
    """Write both units into ``unit_dir``; with ``enable``, reload systemd and start the timer."""
    unit_dir.mkdir(parents=True, exist_ok=True)
    written = [
        atomic_write(unit_dir / f"{u.name}.service", u.service.encode()),
        atomic_write(unit_dir / f"{u.name}.timer", u.timer.encode()),
    ]
    if enable:
        systemctl = shutil.which("systemctl")
        if systemctl is None:
            raise EnvironmentProblem(
                "systemctl not found: the units are written but not enabled",
                hint=f"systemctl enable --now {u.name}.timer on a systemd machine",
            )
        for args in (["daemon-reload"], ["enable", "--now", f"{u.name}.timer"]):
            done = subprocess.run([systemctl, *args], capture_output=True, text=True)
            if done.returncode:
                raise EnvironmentProblem(
                    f"systemctl {' '.join(args)} failed: {done.stderr.strip()[:300]}",
                    hint="run as root (system units) or check journalctl -xe",
                )
    return written
