"""Lab files: load one by path, or a shipped profile by its bare name (``demo``, ``r4``...)."""

from __future__ import annotations

import re
from pathlib import Path

from netfleet.errors import SpecError
from netfleet.lab.models import LabSpec
from netfleet.spec.yamlsrc import load_model

PROFILES_DIR = Path(__file__).parent / "profiles"
_BARE = re.compile(r"^[a-z][a-z0-9-]*$")


def profiles() -> list[str]:
    """Names of the shipped lab profiles."""
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def profile_path(name: str) -> Path:
    return PROFILES_DIR / f"{name}.yaml"


def load_lab(path_or_profile: str | Path) -> LabSpec:
    """Load and validate a lab file; a bare name such as ``demo`` means the shipped profile."""
    text = str(path_or_profile)
    if isinstance(path_or_profile, str) and _BARE.match(text):
        if text in profiles():
            return load_model(LabSpec, profile_path(text), what="lab file")
        if not Path(text).exists():
            raise SpecError(
                f"{text!r} is neither a shipped lab profile nor a file",
                hint=f"use a profile ({', '.join(profiles())}) or the path of a lab .yaml file",
            )
    return load_model(LabSpec, Path(path_or_profile), what="lab file")
