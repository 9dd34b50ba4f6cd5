"""The trip of a task's tables from a worker to the importing process (issue 26): record
batches without their schemas in one buffer, a large batch without its columns of nulls only,
made again equal on landing."""

from __future__ import annotations

import pickle

import pyarrow as pa

from netfleet.catalog import reader
from netfleet.catalog.layout import TABLES
from netfleet.catalog.schemas import SCHEMAS


def _table(name: str, rows: int, *, nulls_only: bool = False) -> pa.Table:
    """Rows of ``name`` whose text and int columns have values (unless ``nulls_only``), the
    others nulls only."""
    columns: dict[str, list[object]] = {}
    for field in SCHEMAS[name]:
        if not nulls_only and pa.types.is_string(field.type):
            columns[field.name] = [f"{field.name}{n % 7}" for n in range(rows)]
        elif not nulls_only and pa.types.is_integer(field.type):
            columns[field.name] = [n if n % 5 else None for n in range(rows)]
        else:
            columns[field.name] = [None] * rows
    return pa.Table.from_pydict(columns, schema=SCHEMAS[name])


def test_tables_land_as_they_were_shipped() -> None:
    big = reader.PACKED_ROWS + 3
    cases = {
        "intervals": pa.concat_tables([_table("intervals", big), _table("intervals", 5)]),
        "runs": _table("runs", big, nulls_only=True),  # a batch of nulls only keeps its length
        "ends": _table("ends", 4),
    }
    tables = {name: cases.get(name, SCHEMAS[name].empty_table()) for name in TABLES}
    columns = {"source": ["a"], "state": ["ok"]}

    def task(items: object) -> tuple[object, object]:
        return columns, tables

    shipped = pickle.loads(pickle.dumps(reader._shipped(task, [])))
    _, blob, packings = shipped
    intervals = [p for p in packings if p.table == "intervals"]
    assert len(intervals[0].sent) < len(SCHEMAS["intervals"])  # its nulls-only columns stayed
    assert len(intervals[1].sent) == len(SCHEMAS["intervals"])  # a small batch: as it is
    assert len(blob) < sum(t.nbytes for t in tables.values())
    _, got_columns, landed = reader._landed([], shipped)
    assert got_columns == columns
    for name in TABLES:
        assert landed[name].schema.equals(SCHEMAS[name])
        assert landed[name].equals(tables[name]), name


def test_the_tasks_handed_to_workers_end_short() -> None:
    """Handed to workers, a read's tasks are whole but for the last two tasks' worth of files
    or more, in quarters: no worker's last task keeps it alone for long while the others idle.
    Read here, every task is whole; either way every file once, in order."""
    todo = list(range(1000))
    tapered = reader._cut(todo, 128, taper=True)
    short = [len(task) for task in tapered if len(task) < 128]
    assert [n for task in tapered for n in task] == todo
    assert max(short) == 32 and sum(short) >= 2 * 128
    assert [len(task) for task in tapered[: len(tapered) - len(short)]] == [128] * 5
    here = reader._cut(todo, 128, taper=False)
    assert [n for task in here for n in task] == todo
    assert [len(task) for task in here] == [128] * 7 + [104]
    assert [len(task) for task in reader._cut(todo[:200], 128, taper=True)] == [32] * 6 + [8]
