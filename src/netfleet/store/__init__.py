"""Raw result store: one gzip JSON envelope per run under a Hive-partitioned results root."""

from netfleet.store.envelope import (
    FORMAT_VERSION,
    CommandRecord,
    EngineRecord,
    Envelope,
    HostRecord,
    upgrade,
)
from netfleet.store.root import ResultsRoot, open_root

__all__ = [
    "FORMAT_VERSION",
    "CommandRecord",
    "EngineRecord",
    "Envelope",
    "HostRecord",
    "ResultsRoot",
    "open_root",
    "upgrade",
]
