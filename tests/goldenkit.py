"""The cases of the golden rows (tests/fixtures/golden/, written by
scripts/golden_rows.py from the reference builder :func:`netfleet.catalog.build.envelope_rows`):
every captured iperf3 output as the envelope netfleet stores (the ``ingest`` entry point), and
every captured foreign file as ``register`` reads it by reference; each table's rows in a
normal form (JSON values, sorted) that a catalog read back compares with."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import date, datetime
from pathlib import Path
from typing import Any

from netfleet.store.envelope import EngineRecord, Envelope, HostRecord

HERE = Path(__file__).parent / "fixtures"
GOLDEN_DIR = HERE / "golden"
NETFLEET = json.loads((HERE / "iperf3" / "MANIFEST.json").read_text())["fixtures"]
#: the tables compared (``latency*`` hold no iperf3 row)
TABLES = ("runs", "intervals", "ends")


def _one_object(path: Path) -> bool:
    try:
        return isinstance(json.loads(path.read_text()), dict)
    except ValueError:  # --json-stream lines: netfleet import's business
        return False


IMPORTS = sorted(
    p.name.removesuffix(".client.json")
    for p in (HERE / "import").glob("*.client.json")
    if _one_object(p)
)
#: the envelopes' cases: netfleet's own captures, and the imported captures' client JSON
CASES = sorted(NETFLEET) + IMPORTS
#: the files read by reference: every captured file an import takes — foreign iperf3 (both
#: sides, ``--json-stream``, a text server), iperf 2 (CSV, ``-e`` and plain text), others'
#: published outputs, and netfleet's own iperf3 and iperf 2 captures (one refused: its reason
#: is its golden)
FOREIGN_DIRS = ("import", "import/iperf2", "import/flowcap", "iperf3", "iperf3_live", "iperf2",
                "public")  # fmt: skip
FOREIGN = sorted(
    p
    for folder in FOREIGN_DIRS
    for p in (HERE / folder).iterdir()
    if p.is_file() and p.name not in ("MANIFEST.json", "SOURCES.md", "ENVELOPES.json")
)
#: the modification time every foreign file is read with (iperf 2 text has no start time: a
#: run's start is then its file's)
MTIME = 1_500_000_000


def foreign_name(path: Path) -> str:
    """A foreign file's golden name: its path under ``import/`` (the first captures), else
    under the fixtures, without ``.json``."""
    under = HERE / "import" if path.parent == HERE / "import" else HERE
    return path.relative_to(under).as_posix().removesuffix(".json")


def _result(name: str) -> dict[str, Any]:
    """A captured client JSON; imported ones carry the server's JSON as netfleet stores it."""
    if name in NETFLEET:
        doc: dict[str, Any] = json.loads((HERE / "iperf3" / f"{name}.json").read_text())
        return doc
    client = json.loads((HERE / "import" / f"{name}.client.json").read_text())
    server = HERE / "import" / f"{name}.server.json"
    if "server_output_json" not in client and _one_object(server):
        client["server_output_json"] = json.loads(server.read_text())
    return client


def envelope(name: str, run_id: str, result: Any = "fixture", **params: Any) -> Envelope:
    meta = NETFLEET.get(name, {})
    return Envelope(
        netfleet_version="0.1.0",
        run_id=run_id,
        run_key=f"{name}/0",
        campaign="camp",
        test=name,
        repeat=0,
        sequence=0,
        status=meta.get("status", "ok"),
        direction=meta.get("direction", "out"),
        subject="client",
        params={**meta.get("params", {}), **params},
        labels={"instance_type": "m5.large", "odd": 'it\'s "quoted" ünï'},
        client=HostRecord(name="cli", kind="local", address="127.0.0.1", facts={"mtu": 1500}),
        server=HostRecord(name="srv", kind="local", address="127.0.0.1", facts={"cpus": 2}),
        engine=EngineRecord(name="iperf3", version="3.12", argv=["iperf3"]),
        started_at="2026-11-22T05:23:19.250000+00:00",
        ended_at="2026-11-22T05:23:22Z",
        duration_s=2.75,
        result=_result(name) if result == "fixture" else result,
    )


def run_id(n: int, name: str) -> str:
    return f"r{n:02d}-{name}"


def _value(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def normal(rows: Iterable[dict[str, Any]], table: str, where: str = "") -> list[list[Any]]:
    """Rows as sorted lists of JSON values in the table's declared column order; ``runs``'
    ``source`` left out and any text holding ``where`` (the folder the files were read from)
    made independent of it."""
    from netfleet.catalog.schemas import SCHEMAS

    names = [n for n in SCHEMAS[table].names if not (table == "runs" and n == "source")]
    out = []
    for row in rows:
        values = []
        for name in names:
            value = _value(row.get(name))
            if where and isinstance(value, str):
                value = value.replace(where, "<fixtures>")
            values.append(value)
        out.append(values)
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))
