"""The catalog's table schemas (Arrow), made from the one declaration of the tables
(:data:`netfleet.catalog.columns.DECLARED`): what a process that reads or writes catalog
tables needs, without the engines' row code (which loads the engine registry, and with it
pydantic). Column meanings are documented in docs/catalog.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyarrow as pa

from netfleet.catalog.columns import DECLARED, Column

_TYPES = {
    "string": pa.string(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "date32": pa.date32(),
    "timestamp": pa.timestamp("us"),
}


def schema_of(columns: tuple[Column, ...]) -> pa.Schema:
    return pa.schema([(c.name, _TYPES[c.kind]) for c in columns])


class _Schemas(Mapping[str, pa.Schema]):
    """table name → schema, in publish order (``runs`` last: it commits a batch), made from
    :data:`~netfleet.catalog.columns.DECLARED` as it is now (a column declared at run time is
    in the next schema asked for)."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[tuple[Column, ...], pa.Schema]] = {}

    def __getitem__(self, table: str) -> pa.Schema:
        columns = DECLARED[table]
        made = self._made.get(table)
        if made is None or made[0] is not columns:
            made = self._made[table] = (columns, schema_of(columns))
        return made[1]

    def __iter__(self) -> Iterator[str]:
        return iter(DECLARED)

    def __len__(self) -> int:
        return len(DECLARED)


SCHEMAS: Mapping[str, pa.Schema] = _Schemas()

INTERVALS_SCHEMA = SCHEMAS["intervals"]
