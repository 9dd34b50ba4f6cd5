"""Where runs come from: a raw file in the results root (any stored run), or the catalog
(groups of complete runs, read through DuckDB)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from netfleet.analysis.analyze import (
    GroupAnalysis,
    RunAnalysis,
    analyze_group,
    analyze_phases,
    analyze_rows,
    group_runs,
)
from netfleet.analysis.segments import SegmentationConfig
from netfleet.analysis.series import RunInfo, run_from_envelope
from netfleet.catalog import connect
from netfleet.catalog.columns import RowError
from netfleet.engines import measuring
from netfleet.errors import CatalogError, InputError, StoreError
from netfleet.store import RawStore, ResultsRoot
from netfleet.store.root import as_root

#: the interval columns the analysis reads
_COLUMNS = 'run_id, side, role, flow, kind, idx, start, "end", seconds, bytes, omitted'


def find_run(results: RawStore | str | os.PathLike[str], run_id: str) -> Any:
    """The raw file of ``run_id`` under a results root; ``run_id`` may also be a path to a
    ``.json.gz`` file."""
    direct = Path(run_id)
    if run_id.endswith(".json.gz") and direct.is_file():
        return direct
    root = as_root(results)
    if "/" in run_id or run_id.startswith("."):
        raise InputError(f"{run_id!r} is neither a run id nor a raw .json.gz file")
    found = root.glob(f"d=*/campaign=*/{run_id}.json.gz")
    if not found:
        raise InputError(
            f"no run {run_id!r} under {root.url}",
            hint='list runs with: netfleet sql "SELECT run_id FROM runs" (or pass --results, '
            "or the path of a .json.gz file)",
        )
    return found[0]


def analyze_file(
    path: Any,
    config: SegmentationConfig | None = None,
    flow: str | None = None,
    root: RawStore | None = None,
) -> RunAnalysis:
    """Analyse one raw result file or object of ``root`` (any status, any run)."""
    doc = root.read(path) if root is not None else ResultsRoot.read(path)
    try:
        info, rows = run_from_envelope(doc, str(path))
    except RowError as exc:
        raise StoreError(f"{path}: {exc}", hint="the file is not a usable netfleet result") from exc
    result = doc.get("result")
    if isinstance(result, Mapping) and isinstance(result.get("phases"), list):
        params = doc.get("params") if isinstance(doc.get("params"), Mapping) else None
        return analyze_phases(info, result["phases"], params)
    return analyze_rows(info, rows, config, flow=flow)


def analyze_run(
    results: RawStore | str | os.PathLike[str],
    run_id: str,
    config: SegmentationConfig | None = None,
    flow: str | None = None,
) -> RunAnalysis:
    """Find ``run_id`` under ``results`` and analyse it."""
    root = as_root(results)
    return analyze_file(find_run(root, run_id), config, flow, root)


def catalog_runs(
    catalog_dir: str | os.PathLike[str],
    campaign: str | None = None,
    run_ids: Sequence[str] | None = None,
) -> list[tuple[RunInfo, list[dict[str, Any]]]]:
    """Complete runs (status ok) from the catalog, each with its ``sum`` interval rows."""
    con = connect(catalog_dir)
    try:
        where, params = ["status = 'ok'"], []
        if campaign is not None:
            where.append("campaign = ?")
            params.append(campaign)
        if run_ids:
            where.append(f"run_id IN ({', '.join('?' for _ in run_ids)})")
            params.extend(run_ids)
        cond = " AND ".join(where)
        # with each run, its sending iperf3's CPU (end summary): evidence of too few streams
        runs = _records(
            con.execute(
                f"SELECT r.*, e.host_total AS end_host_cpu, e.remote_total AS end_remote_cpu "  # noqa: S608
                f"FROM (SELECT * FROM runs WHERE {cond}) r LEFT JOIN ends e "
                "ON e.run_id = r.run_id AND e.side = 'client' ORDER BY r.started_at",
                params,
            )
        )
        rows = _records(
            con.execute(
                f"SELECT {_COLUMNS} FROM intervals WHERE kind = 'sum' AND run_id IN "  # noqa: S608
                f"(SELECT run_id FROM runs WHERE {cond}) ORDER BY run_id, side, idx",
                params,
            )
        )
    except duckdb.Error as exc:
        raise CatalogError(f"reading runs from the catalog failed: {exc}") from exc
    finally:
        con.close()
    by_run: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_run.setdefault(str(r["run_id"]), []).append(r)
    return [(RunInfo.from_row(r), by_run.get(str(r["run_id"]), [])) for r in runs]


def _records(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description or []]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def matching(
    runs: Sequence[tuple[RunInfo, list[dict[str, Any]]]], match: Mapping[str, Any]
) -> list[tuple[RunInfo, list[dict[str, Any]]]]:
    """The runs whose key (runs column or label) equals each value, compared as text."""
    return [
        (info, rows)
        for info, rows in runs
        if all(str(info.key(k)) == str(v) for k, v in match.items())
    ]


def analyze_catalog(
    catalog_dir: str | os.PathLike[str],
    by: Sequence[str] = ("instance_type", "direction"),
    campaign: str | None = None,
    match: Mapping[str, Any] | None = None,
    config: SegmentationConfig | None = None,
) -> list[GroupAnalysis]:
    """Every group of complete runs in the catalog (optionally one campaign, and only runs
    whose keys match ``match``), analysed."""
    runs = catalog_runs(catalog_dir, campaign)
    if match:
        runs = matching(runs, match)
    if not runs:
        what = [f"campaign {campaign!r}"] if campaign else []
        what += [f"{k}={v}" for k, v in (match or {}).items()]
        raise InputError(
            "no complete runs in the catalog" + (f" for {', '.join(what)}" if what else ""),
            hint="run netfleet ingest first, or check --campaign / --match",
        )
    # engines whose series the catalog does not index (phases): analysed from the raw file (the
    # registry is asked when called: an engine registered late counts)
    raw_only = measuring("credit")
    prepared = {
        info.run_id: analyze_file(Path(info.source), config)
        for info, rows in runs
        if not rows and info.row.get("engine") in raw_only and Path(info.source).is_file()
    }
    groups = group_runs(runs, by)
    return [
        analyze_group(dict(zip(by, key, strict=True)), members, config, prepared=prepared)
        for key, members in groups.items()
    ]
