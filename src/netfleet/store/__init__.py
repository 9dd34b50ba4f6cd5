"""Raw result store: one gzip JSON envelope per run under a Hive-partitioned results root.

The names below are loaded on first use: listing a root (a no-op ingest, the "not in the
catalog yet" check) needs neither the envelope's pydantic models nor boto3."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netfleet.store.envelope import (
        FORMAT_VERSION,
        CommandRecord,
        EngineRecord,
        Envelope,
        HostRecord,
        upgrade,
    )
    from netfleet.store.root import RawStore, ResultsRoot, open_root
    from netfleet.store.s3 import S3Root

_HOMES = {
    "FORMAT_VERSION": "envelope",
    "CommandRecord": "envelope",
    "EngineRecord": "envelope",
    "Envelope": "envelope",
    "HostRecord": "envelope",
    "upgrade": "envelope",
    "RawStore": "root",
    "ResultsRoot": "root",
    "open_root": "root",
    "S3Root": "s3",
}

__all__ = [
    "FORMAT_VERSION",
    "CommandRecord",
    "EngineRecord",
    "Envelope",
    "HostRecord",
    "RawStore",
    "ResultsRoot",
    "S3Root",
    "open_root",
    "upgrade",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'netfleet.store' has no attribute {name!r}")
    return getattr(importlib.import_module(f"netfleet.store.{home}"), name)
