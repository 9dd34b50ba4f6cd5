"""``lab up``, ``lab down``, ``lab status`` and ``lab profiles``: an emulated fleet of network
namespaces on this machine."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netfleet.lab import LabSpec, LabStatus


@dataclass
class LabUp:
    """A lab brought up: its name and its hosts, shapers and processes."""

    name: str
    status: list[LabStatus]


def lab_up(lab: str | os.PathLike[str], *, state_dir: Path | None = None) -> LabUp:
    """Create the lab's namespaces, links, addresses and shapers (needs root). ``lab``: a lab
    file (YAML) or a shipped profile name (:func:`lab_profiles`)."""
    from netfleet import lab as labmod

    spec = labmod.load_lab(lab if isinstance(lab, str) else Path(lab))
    state = labmod.up(spec, state_dir=state_dir)
    return LabUp(state.name, labmod.status(state.name, state_dir=state_dir))


def lab_down(name: str, *, state_dir: Path | None = None, missing_ok: bool = False) -> list[str]:
    """Remove exactly what the lab created (also after a crash); returns the namespaces
    removed. A lab that is not up is an error unless ``missing_ok``."""
    from netfleet import lab as labmod

    return labmod.down(name, state_dir=state_dir, missing_ok=missing_ok)


def lab_status(name: str | None = None, *, state_dir: Path | None = None) -> list[LabStatus]:
    """Labs (one, or all), their hosts, shapers (with live counters) and processes."""
    from netfleet import lab as labmod

    return labmod.status(name, state_dir=state_dir)


def lab_profiles() -> dict[str, LabSpec]:
    """The lab profiles shipped with netfleet, by name."""
    from netfleet import lab as labmod

    return {name: labmod.load_lab(name) for name in labmod.profiles()}
