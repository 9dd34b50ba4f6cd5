"""The manifest's contract (issue 26): one Parquet file, these columns, replaced atomically,
its generation readable without reading the rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from netfleet.catalog.manifest import (
    INDEX,
    MANIFEST,
    current_generation,
    read_manifest,
    rows_table,
    write_manifest,
)

CONTRACT = {
    "file_id": "string",
    "source": "string",
    "size": "int64",
    "mtime_ns": "int64",
    "inode": "int64",
    "etag": "string",
    "run_id": "string",
    "generation": "int64",
    "state": "string",
    "reason": "string",
    "labels": "string",
}


def test_an_empty_catalog_has_generation_zero_and_no_rows(tmp_path: Path) -> None:
    assert current_generation(tmp_path) == 0
    table = read_manifest(tmp_path)
    assert table.num_rows == 0
    assert {f.name: str(f.type) for f in table.schema if f.name in CONTRACT} == CONTRACT


def test_the_manifest_is_replaced_whole_with_its_generation(tmp_path: Path) -> None:
    row = {"file_id": "a" * 64, "source": "/x/a.json", "size": 3, "mtime_ns": 5, "inode": 7,
           "run_id": "import-1", "generation": 1, "state": "ok", "labels": "{}"}  # fmt: skip
    write_manifest(tmp_path, rows_table([row]), 1)
    write_manifest(tmp_path, rows_table([row, {**row, "source": "/x/b.json"}]), 2)
    assert current_generation(tmp_path) == 2
    table = read_manifest(tmp_path)
    assert table.column("source").to_pylist() == ["/x/a.json", "/x/b.json"]
    on_disk = pq.read_schema(tmp_path / MANIFEST)
    assert list(on_disk.names[: len(CONTRACT)]) == list(CONTRACT)
    assert sorted(p.name for p in tmp_path.iterdir()) == [INDEX, MANIFEST]  # no temp file
    assert (tmp_path / MANIFEST).stat().st_mode & 0o777 == 0o644


def test_the_generation_comes_from_the_parquet_file_when_the_index_is_not_its_own(
    tmp_path: Path,
) -> None:
    row = {"source": "/x/a.json", "state": "ok", "generation": 3, "labels": "{}"}
    write_manifest(tmp_path, rows_table([row]), 3)
    (tmp_path / INDEX).write_text('{"generation": 99, "manifest": [1, 2, 3], "rows": []}')
    assert current_generation(tmp_path) == 3


def test_option_shortcuts_are_what_the_checks_say() -> None:
    """The import's option checks skip loading the spec's rules for the default campaign, no
    labels and a preset pattern: each of those passes the rules it skips."""
    import re

    from netfleet.spec.common import NAME, check_labels
    from netfleet.store.sources import DEFAULT_CAMPAIGN, PRESETS, pattern_regex

    assert re.match(NAME, DEFAULT_CAMPAIGN)
    for preset in PRESETS.values():
        check_labels(dict.fromkeys(pattern_regex(preset).groupindex, ""))


def test_the_generation_is_read_from_the_index_head_only_when_it_is_the_manifest_s(
    tmp_path: Path,
) -> None:
    """The cheat sheet's cache key reads the generation from the index's first bytes; they
    count only when they carry the stat of the manifest that is there."""
    from netfleet.catalog.manifest import _head_generation, read_index

    write_manifest(tmp_path, rows_table([{"source": "/x/a.json", "state": "ok"}]), 4)
    index = read_index(tmp_path)
    assert index is not None and _head_generation(tmp_path) == 4 == index.generation
    data = (tmp_path / INDEX).read_bytes()
    (tmp_path / INDEX).write_bytes(data.replace(b'"generation": 4', b'"generation": 5', 1))
    assert _head_generation(tmp_path) == 5  # the head is what is read ...
    write_manifest(tmp_path, rows_table([{"source": "/x/b.json", "state": "ok"}]), 6)
    (tmp_path / INDEX).write_bytes(data)  # ... and an index of other manifest files is not
    assert _head_generation(tmp_path) is None
    assert read_index(tmp_path) is None
    assert current_generation(tmp_path) == 6
