"""Where runs come from: a raw file in the results root (any stored run), or the catalog
(groups of complete runs, read through DuckDB)."""

from __future__ import annotations

import json
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
from netfleet.errors import CatalogError, InputError, NetfleetError, StoreError
from netfleet.store import RawStore, ResultsRoot
from netfleet.store.root import as_root

#: the interval columns the analysis reads
_COLUMNS = 'run_id, side, role, flow, kind, idx, start, "end", seconds, bytes, omitted'


def find_run(results: RawStore | str | os.PathLike[str], run_id: str) -> Any:
    """The raw file of ``run_id`` under a results root; ``run_id`` may also be a path to a
    ``.json.gz`` file. None when the results root does not hold it."""
    direct = Path(run_id)
    if run_id.endswith(".json.gz") and direct.is_file():
        return direct
    if "/" in run_id or run_id.startswith("."):
        raise InputError(f"{run_id!r} is neither a run id nor a raw .json.gz file")
    found = as_root(results).glob(f"d=*/campaign=*/{run_id}.json.gz")
    return found[0] if found else None


def run_document(
    results: RawStore | str | os.PathLike[str],
    run_id: str,
    catalog_dir: str | os.PathLike[str] | None = None,
) -> tuple[dict[str, Any], str]:
    """The envelope of ``run_id`` and where it was read: its raw file under ``results`` (or
    the ``.json.gz`` file ``run_id`` names), else the run the catalog holds — a file imported
    by reference read from its source (or kept copy) and checked against the manifest's
    SHA-256 (:func:`catalog_documents`), an ingested run from its raw file."""
    root = as_root(results)
    path = find_run(root, run_id)
    if path is not None:
        return root.read(path), str(path)
    if catalog_dir is not None and Path(catalog_dir).is_dir():
        docs, problems = catalog_documents(catalog_dir, [run_id])
        if problems:
            source, why = problems[0]
            raise CatalogError(f"run {run_id}: {source}: {why}", hint=_REIMPORT)
        if docs:
            return docs[0]
    where = root.url + (f" nor in the catalog {catalog_dir}" if catalog_dir is not None else "")
    raise InputError(
        f"no run {run_id!r} under {where}",
        hint='list runs with: netfleet sql "SELECT run_id FROM runs" (or pass --results / '
        "--catalog, or the path of a .json.gz file)",
    )


_REIMPORT = (
    "put the file back as it was imported, or import it again (netfleet import … --catalog: "
    "a changed file is a new run)"
)


def catalog_documents(
    catalog_dir: str | os.PathLike[str], run_ids: Sequence[str]
) -> tuple[list[tuple[dict[str, Any], str]], list[tuple[str, str]]]:
    """The envelopes of the catalog's runs ``run_ids`` (each with where it was read), and the
    runs that could not be read, as (file, why). A run imported by reference is read from its
    source file — else from its kept copy (``--keep-copy``) — only when its bytes hash to the
    manifest's SHA-256, and turned into the envelope ``netfleet import`` makes of it; any other
    run from the raw file its ``source`` names."""
    from netfleet.catalog.lazystreams import (
        envelope_of,
        has_manifest,
        manifest_runs,
        read_verified,
    )
    from netfleet.store.import_base import ImportProblem

    docs: list[tuple[dict[str, Any], str]] = []
    problems: list[tuple[str, str]] = []
    if not run_ids:
        return docs, problems
    con = connect(catalog_dir)
    try:
        marks = ", ".join("?" for _ in run_ids)
        rows = _records(
            con.execute(
                f"SELECT run_id, source, campaign, labels FROM runs WHERE run_id IN ({marks})",  # noqa: S608
                list(run_ids),
            )
        )
        by_reference = has_manifest(Path(catalog_dir))
        listed = manifest_runs(Path(catalog_dir), run_ids, con=con) if by_reference else []
        registered = {r.run_id: r for r in listed}
    except duckdb.Error as exc:
        raise CatalogError(f"reading runs from the catalog failed: {exc}") from exc
    finally:
        con.close()
    for row in rows:
        source = str(row["source"] or "")
        run = registered.get(str(row["run_id"]))
        if run is None:
            if source and Path(source).is_file():
                docs.append((ResultsRoot.read(Path(source)), source))
            else:
                problems.append((source or str(row["run_id"]), "raw result file not found"))
            continue
        try:
            data = read_verified(run)
            labels = row["labels"]
            labels = json.loads(labels) if isinstance(labels, str) else dict(labels or {})
            doc = envelope_of(run, data, campaign=str(row["campaign"]), labels=labels)
        except CatalogError as exc:
            problems.append((run.source, _without_source(exc.message, run.source)))
            continue
        except (NetfleetError, ImportProblem, ValueError) as exc:
            problems.append((run.source, f"cannot be read as its run ({exc})"))
            continue
        docs.append((doc, run.source))
    return docs, problems


def registered_documents(
    catalog_dir: str | os.PathLike[str], campaign: str | None = None
) -> list[dict[str, Any]]:
    """The envelopes of every run a local catalog holds by reference (of ``campaign`` only,
    when given), each read from its file (:func:`catalog_documents`); a file that is missing
    or changed since it was imported is an error naming it. None without a manifest."""
    from netfleet.catalog.lazystreams import has_manifest
    from netfleet.catalog.manifest import by_reference

    if not Path(catalog_dir).is_dir() or not has_manifest(Path(catalog_dir)):
        return []
    con = connect(catalog_dir)
    try:
        cond, params = ("AND r.campaign = ?", [campaign]) if campaign is not None else ("", [])
        run_ids = [
            str(row[0])
            for row in con.execute(
                "SELECT m.run_id FROM manifest m JOIN runs r ON r.run_id = m.run_id "  # noqa: S608
                f"WHERE {by_reference('m')} {cond} ORDER BY r.started_at, m.run_id",
                params,
            ).fetchall()
        ]
    except duckdb.Error as exc:
        raise CatalogError(f"reading runs from the catalog failed: {exc}") from exc
    finally:
        con.close()
    docs, problems = catalog_documents(catalog_dir, run_ids)
    if problems:
        named = "; ".join(f"{where}: {why}" for where, why in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise CatalogError(f"{len(problems)} run(s) cannot be read: {named}{more}", hint=_REIMPORT)
    return [doc for doc, _ in docs]


def _without_source(message: str, source: str) -> str:
    """A reader's message without the file's name it starts with (named once by the caller)."""
    return message.removeprefix(f"{source}: ")


def analyzed_raw(
    catalog_dir: str | os.PathLike[str],
    run_ids: Sequence[str],
    config: SegmentationConfig | None = None,
) -> dict[str, RunAnalysis]:
    """The catalog's runs ``run_ids`` analysed from their raw files (engines whose series the
    catalog does not index: phases), by run id; a run whose file cannot be read is left out."""
    docs, _ = catalog_documents(catalog_dir, run_ids)
    return {str(doc.get("run_id")): analyze_document(doc, where, config) for doc, where in docs}


def analyze_document(
    doc: dict[str, Any],
    where: str,
    config: SegmentationConfig | None = None,
    flow: str | None = None,
) -> RunAnalysis:
    """Analyse one run's envelope (read from ``where``, named in errors)."""
    try:
        info, rows = run_from_envelope(doc, where)
    except RowError as exc:
        raise StoreError(
            f"{where}: {exc}", hint="the file is not a usable netfleet result"
        ) from exc
    result = doc.get("result")
    if isinstance(result, Mapping) and isinstance(result.get("phases"), list):
        params = doc.get("params") if isinstance(doc.get("params"), Mapping) else None
        return analyze_phases(info, result["phases"], params)
    return analyze_rows(info, rows, config, flow=flow)


def analyze_file(
    path: Any,
    config: SegmentationConfig | None = None,
    flow: str | None = None,
    root: RawStore | None = None,
) -> RunAnalysis:
    """Analyse one raw result file or object of ``root`` (any status, any run)."""
    doc = root.read(path) if root is not None else ResultsRoot.read(path)
    return analyze_document(doc, str(path), config, flow)


def analyze_run(
    results: RawStore | str | os.PathLike[str],
    run_id: str,
    config: SegmentationConfig | None = None,
    flow: str | None = None,
    catalog_dir: str | os.PathLike[str] | None = None,
) -> RunAnalysis:
    """Find ``run_id`` (:func:`run_document`: under ``results``, else in ``catalog_dir``) and
    analyse it."""
    doc, where = run_document(results, run_id, catalog_dir)
    return analyze_document(doc, where, config, flow)


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
    prepared = analyzed_raw(
        catalog_dir, [i.run_id for i, rows in runs if not rows and i.row.get("engine") in raw_only]
    )
    groups = group_runs(runs, by)
    return [
        analyze_group(dict(zip(by, key, strict=True)), members, config, prepared=prepared)
        for key, members in groups.items()
    ]
