"""The sim backing's labs on disk, and taking them down — by the run that made them, by the next
run (a killed session's lease), and by ``netfleet cloud destroy`` / ``cloud reap --delete``
from the cloud state directory alone.

Each lab lives in ``<state>/<campaign>/sim/<lab>/`` (``<lab>`` = ``nf`` + 8 hex digits, made
here) and holds the lab's own state file ``<lab>.json`` (:mod:`netfleet.lab.state`: every
namespace with its identity, recorded before it was created), ``owner`` (the ``sim-lab``
lease id) and ``controller.json`` (who brought it up: the ``netfleet run`` process's PID, start
time, boot id and argv, plus the campaign, region and ``expires-at``).

Before anything is taken down, :func:`take_down` checks, in order, and leaves the lab alone
(:class:`~netfleet.errors.HostError`, saying why) when one check fails:

1. the directory is a real directory named like netfleet's labs, and ``owner`` holds a lease id
   (the lease's own, when a lease releases it);
2. the controller that brought it up is not alive — the recorded PID's ``/proc/PID/cmdline`` and
   start time and the boot id must all match for it to count as alive (a recycled PID does
   not), unless it is this very process (a run releasing its own lab);
3. the state file names the lab and only namespaces called ``nf-<lab>-…``.

Then :func:`netfleet.lab.down` does what ``netfleet lab down`` does: for each recorded namespace
whose identity still matches, stop its processes by PID (each checked to still be in that namespace
right before the signal) and delete it; then the directory goes.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netfleet import durable
from netfleet.cloud.journal import CAMPAIGN_RE
from netfleet.errors import HostError, LabError

LAB_RE = re.compile(r"^nf[0-9a-f]{8}$")
LEASE_RE = re.compile(r"^[0-9a-f]{32}$")
OWNER = "owner"
CONTROLLER = "controller.json"


def sim_root(state_root: Path, campaign: str) -> Path:
    return state_root / campaign / "sim"


def new_lab(state_root: Path, campaign: str) -> tuple[str, Path]:
    """A fresh lab name and the directory it will live in (not made yet)."""
    name = "nf" + os.urandom(4).hex()
    return name, sim_root(state_root, campaign) / name


def claim(lab_dir: Path, lease_id: str, *, region: str, expires_at: str) -> None:
    """Make the lab's directory with ``controller.json`` (this process) and ``owner``."""
    lab_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    record = {
        **(_identity(os.getpid()) or {}),
        "pid": os.getpid(),
        "campaign": lab_dir.parent.parent.name,
        "region": region,
        "expires_at": expires_at,
    }
    durable.atomic_write(lab_dir / CONTROLLER, json.dumps(record, sort_keys=True).encode())
    durable.atomic_write(lab_dir / OWNER, lease_id.encode())


@dataclass(frozen=True)
class LabOutcome:
    lab: str
    path: Path
    outcome: str  #: released | gone | left
    detail: str = ""


def labs(state_root: Path, campaign: str) -> list[Path]:
    """The campaign's lab directories (anything not named like one is not looked at)."""
    root = sim_root(state_root, campaign)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if LAB_RE.match(p.name) and not p.is_symlink())


def controller(lab_dir: Path) -> dict[str, Any] | None:
    """``controller.json``, or None when missing or unreadable."""
    try:
        doc = json.loads((lab_dir / CONTROLLER).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def take_down(lab_dir: Path, lease_id: str | None = None) -> str:
    """Take the lab in ``lab_dir`` down after the checks above: ``released``, or ``gone`` when
    its ``owner`` file is already gone. HostError (the lab left alone) if a check fails."""
    from netfleet import lab
    from netfleet.lab.state import read_state

    name = lab_dir.name
    if not LAB_RE.match(name) or lab_dir.is_symlink():
        raise HostError(f"{lab_dir} is not a directory netfleet's sim backing made: left alone")
    owner = lab_dir / OWNER
    if not owner.exists():
        return "gone"
    held = owner.read_text().strip()
    if lease_id is not None and held != lease_id:
        raise HostError(f"{lab_dir} is not lease {lease_id}'s lab: left alone")
    if not LEASE_RE.match(held):
        raise HostError(f"{owner} holds no lease id: {lab_dir} left alone")
    live = live_controller(lab_dir)
    if live is not None:
        raise HostError(
            f"sim lab {name} ({lab_dir}) is in use by a live netfleet run (pid {live}): left "
            "alone; that run takes it down when it ends",
            hint=f"stop that run (kill -TERM {live}) and run this again",
        )
    state = read_state(name, lab_dir)
    if state is not None:
        foreign = [ns for ns in state.namespaces if not ns.startswith(f"nf-{name}-")]
        if state.name != name or foreign:
            raise HostError(
                f"the state file in {lab_dir} names lab {state.name!r} and namespaces "
                f"{', '.join(foreign) or '-'}: not this lab's, left alone"
            )
    lab.down(name, lab_dir)
    shutil.rmtree(lab_dir)
    return "released"


def release_campaign(
    state_root: Path, campaign: str, dirs: list[Path] | None = None
) -> list[LabOutcome]:
    """Take down the campaign's labs (``dirs``, default all of them) from the state directory
    alone (``cloud destroy``, ``cloud reap --delete``); a lab that fails a check is ``left``."""
    out = []
    for d in labs(state_root, campaign) if dirs is None else dirs:
        try:
            outcome, detail = take_down(d), ""
        except (HostError, LabError) as exc:
            outcome, detail = "left", str(exc)
        out.append(LabOutcome(d.name, d, outcome, detail))
    return out


def expired(state_root: Path, now: dt.datetime) -> dict[str, list[tuple[Path, dict[str, Any]]]]:
    """campaign → its labs whose ``expires_at`` has passed (``cloud reap``); a lab without a
    readable ``controller.json`` has no known deadline and is not reaped (``cloud destroy``
    or ``netfleet lab down`` takes it)."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    out: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    if not state_root.is_dir():
        return out
    for cdir in sorted(state_root.iterdir()):
        if not (cdir.is_dir() and CAMPAIGN_RE.match(cdir.name)):
            continue
        for d in labs(state_root, cdir.name):
            meta = controller(d)
            exp = meta.get("expires_at") if meta else None
            if isinstance(exp, str) and exp < stamp and meta:
                out.setdefault(cdir.name, []).append((d, meta))
    return out


def live_controller(lab_dir: Path) -> int | None:
    """The PID of the live process that brought the lab up, if it is alive and not this one.

    Alive means: ``/proc/PID/cmdline`` is the recorded argv *and* the start time and boot id
    match the record — a PID recycled by another program is not the controller."""
    meta = controller(lab_dir)
    if meta is None:
        raise HostError(
            f"{lab_dir} has no readable {CONTROLLER}: cannot tell whether the run that made it "
            "is still alive, left alone",
            hint=f"if no netfleet run uses it: netfleet lab down {lab_dir.name} "
            f"--state-dir {lab_dir}",
        )
    pid = meta.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        raise HostError(f"{lab_dir / CONTROLLER} holds no PID: left alone")
    if pid == os.getpid():
        return None
    now = _identity(pid)
    if now is None:
        return None
    same = all(now.get(k) == meta.get(k) for k in ("cmdline", "start", "boot_id"))
    return pid if same else None


def _identity(pid: int) -> dict[str, Any] | None:
    """argv, start time (clock ticks after boot) and boot id of a live ``pid``; None if gone."""
    from netfleet.runner.strays import local_identity

    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    who = local_identity(pid)
    if not raw or who is None:  # a zombie has an empty cmdline
        return None
    argv = raw.decode(errors="replace").split("\0")
    if argv and argv[-1] == "":
        argv.pop()
    return {"cmdline": argv, "start": who["start"], "boot_id": who["boot_id"]}
