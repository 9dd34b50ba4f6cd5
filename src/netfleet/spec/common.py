"""What every spec model shares: strict models, name and label patterns, path resolution."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo

from netfleet.keymaterial import looks_like_key_material, looks_like_secret_name

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
LABEL_KEY = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
LabelValue = str | int | float | bool | None


class LocatedError(ValueError):
    """A validator's error that knows which field it is about (``loc``), so the message points
    at that field's line instead of the top of the file (e.g. an unknown host in
    ``tests.2.client``)."""

    def __init__(self, message: str, loc: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.loc = loc


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_labels(labels: dict[str, Any]) -> dict[str, Any]:
    for key, value in labels.items():
        if looks_like_secret_name(key):
            raise ValueError(
                f"label {key!r} looks like a secret: labels are copied into every result file "
                "(often in a shared directory): remove it and keep secrets out of specs"
            )
        if isinstance(value, str) and looks_like_key_material(value):
            raise ValueError(
                f"label {key!r} holds what looks like private-key material: remove it "
                "(labels are copied into every result file)"
            )
        if not re.match(LABEL_KEY, key):
            raise ValueError(
                f"label key {key!r} is not allowed: use letters, digits, '_', '.', '-' and start "
                "with a letter or '_'"
            )
    return labels


#: the label check every spec model applies, for labels given elsewhere (``netfleet import``)
check_labels = _check_labels


def resolve_path(value: str | None, info: ValidationInfo) -> str | None:
    """``~`` expanded; a relative path is taken relative to the file being loaded (the spec or
    inventory that names it), so a campaign works from any current directory."""
    if value is None:
        return None
    path = Path(value).expanduser()
    source = (info.context or {}).get("file")
    if not path.is_absolute() and source:
        path = Path(source).resolve().parent / path
    return str(path)
