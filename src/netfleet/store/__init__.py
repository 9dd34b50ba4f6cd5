"""Raw result store: one gzip JSON envelope per run under a Hive-partitioned results root."""

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
