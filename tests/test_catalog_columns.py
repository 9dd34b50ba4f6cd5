"""The catalog's tables are declared once (:mod:`netfleet.catalog.columns`): a ``runs`` column
added to the declaration is made, typed and written by both ways in — ``ingest`` of envelopes
and ``register`` of foreign files by reference — with no other edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from netfleet.catalog import ingest, query
from netfleet.catalog.columns import DECLARED, Column, run_row
from netfleet.catalog.register import register
from netfleet.catalog.schemas import SCHEMAS
from netfleet.store.imports import import_files
from netfleet.store.root import ResultsRoot

FIXTURE = Path(__file__).parent / "fixtures" / "import" / "v3_12_tcp.client.json"


@pytest.fixture
def with_a_new_column(monkeypatch: pytest.MonkeyPatch) -> str:
    """A ``runs`` column declared at run time: the engine's name and version in one."""
    column = Column("engine_said", "string", lambda env: "{name} {version}".format(**env.engine))
    monkeypatch.setitem(DECLARED, "runs", (*DECLARED["runs"], column))
    return column.name


def test_a_declared_column_is_in_the_schema_and_the_row(with_a_new_column: str) -> None:
    assert SCHEMAS["runs"].field(with_a_new_column).type == "string"
    assert SCHEMAS["runs"].names[-1] == with_a_new_column
    doc = {"run_id": "r", "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:01Z",
           "engine": {"name": "iperf3", "version": "3.12a"}}  # fmt: skip
    assert run_row(doc, "x")[with_a_new_column] == "iperf3 3.12a"


def test_a_declared_column_reaches_the_catalog_by_ingest(
    tmp_path: Path, with_a_new_column: str
) -> None:
    root = ResultsRoot(tmp_path / "raw")
    assert not import_files([str(FIXTURE)], root).bad
    report = ingest(root, tmp_path / "cat")
    assert (report.ingested, report.bad) == (1, [])
    rows = query(tmp_path / "cat", f"SELECT {with_a_new_column}, engine_version FROM runs").rows
    assert rows == [[f"iperf3 {rows[0][1]}", rows[0][1]]] and rows[0][1]


def test_a_declared_column_reaches_the_catalog_by_register(
    tmp_path: Path, with_a_new_column: str
) -> None:
    report = register([str(FIXTURE)], tmp_path / "cat")
    assert len(report.registered) == 1 and not report.bad
    rows = query(tmp_path / "cat", f"SELECT {with_a_new_column}, engine_version FROM runs").rows
    assert rows == [[f"iperf3 {rows[0][1]}", rows[0][1]]] and rows[0][1]
