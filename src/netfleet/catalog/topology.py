"""Seed 001's summary table from one campaign: latency and throughput per topology.

Seed 001 compared "same AD", "same placement group", "different AZ"... with uperf: a 90-byte
request/response mean (latency) and an 8-thread throughput. Here each run's topology is a label
(``topology`` by default, any label key or runs column works) and the table gives, per value:

* request/response latency (``latency`` engine): mean, p50, p99 in µs — each the mean over
  runs of the run's own figure (the samples are not stored, so no percentile over the pooled
  samples exists), with the worst run's p99 beside it — transactions/s, and whether it is the
  full round trip;
* ICMP (``ping`` engine): average round trip in µs and loss;
* throughput (``iperf3``, ``iperf3-multi``, ``iperf2``, ``throughput``): the receiver's total,
  averaged over the complete runs of one stream count — the count that carried the most, named
  in ``streams`` — in Gbit/s; with several counts, each count's average beside it
  (``throughput_by_streams``). Runs of different stream counts are never averaged together: a
  1-stream and a 2-stream run make no configuration anybody ran.
"""

from __future__ import annotations

import os
from typing import Any

import duckdb

from netfleet.catalog.cheatsheet import _Keys
from netfleet.catalog.views import connect
from netfleet.engines import measuring
from netfleet.errors import CatalogError

THROUGHPUT_ENGINES = measuring("throughput")
COLUMNS = [
    "latency_runs", "rr_mean_us", "rr_p50_us", "rr_p99_us", "rr_p99_worst_run_us",
    "transactions_per_s",
    "full_round_trip", "ping_avg_us", "ping_loss_percent", "throughput_runs",
    "throughput_gbps", "streams", "throughput_by_streams",
]  # fmt: skip


def topology_rows(
    catalog_dir: str | os.PathLike[str], by: str = "topology", campaign: str | None = None
) -> tuple[list[list[Any]], int, list[tuple[Any, str, str | None]]]:
    """One row per value of ``by`` (a label key or runs column): the value, then
    :data:`COLUMNS`; how many throughput runs had no end summary (blank, never 0); and the
    values measured in a scaled lab: (value, ``lab_scale`` labels, ``lab_time_scale`` labels)."""
    con = connect(catalog_dir)
    try:
        expr, params = _Keys(con).resolve(by)
        where = " AND r.campaign = ?" if campaign else ""
        params = [*params, *([campaign] if campaign else [])]
        engines = ", ".join(f"'{e}'" for e in measuring("throughput"))
        sql = f"""
        WITH r AS (SELECT r.run_id, r.engine, r.parallel, {expr} AS g,
                          json_extract_string(r.labels, '$.lab_scale') AS lab_scale,
                          json_extract_string(r.labels, '$.lab_time_scale') AS lab_time
                   FROM runs r WHERE r.status = 'ok'{where}),
        sc AS (SELECT g, string_agg(DISTINCT lab_scale, ',' ORDER BY lab_scale) AS lab_scale,
                      string_agg(DISTINCT lab_time, ',' ORDER BY lab_time) AS lab_time
               FROM r GROUP BY g),
        rr AS (SELECT g, count(*) AS n, avg(mean_us) AS mean_us, avg(p50_us) AS p50,
                      avg(p99_us) AS p99, max(p99_us) AS p99max,
                      avg(transactions_per_s) AS tps,
                      bool_and(full_round_trip) AS full
               FROM r JOIN latency l USING (run_id) WHERE l.kind = 'request_response'
               GROUP BY g),
        icmp AS (SELECT g, avg(mean_us) AS ping_us, avg(loss_percent) AS loss
                 FROM r JOIN latency l USING (run_id) WHERE l.kind = 'icmp' GROUP BY g),
        per AS (SELECT g, coalesce(r.parallel, 1) AS p,
                       count(nullif(e.sum_received_bps, 0)) AS n,
                       avg(nullif(e.sum_received_bps, 0)) / 1e9 AS gbps,
                       count(*) - count(nullif(e.sum_received_bps, 0)) AS missing
                FROM r JOIN ends e USING (run_id)
                WHERE e.side = 'client' AND r.engine IN ({engines}) GROUP BY g, p),
        tp AS (SELECT g, arg_max(n, gbps) AS n, max(gbps) AS gbps, sum(missing) AS missing,
                      CAST(arg_max(p, gbps) AS VARCHAR) AS streams,
                      CASE WHEN count(gbps) > 1 THEN string_agg(
                          CAST(p AS VARCHAR) || ': ' || printf('%.2f', gbps), ', ' ORDER BY p
                      ) FILTER (WHERE gbps IS NOT NULL) END AS by_streams
               FROM per GROUP BY g)
        SELECT k.g, rr.n, rr.mean_us, rr.p50, rr.p99, rr.p99max, rr.tps, rr.full, icmp.ping_us,
               icmp.loss, tp.n, tp.gbps, tp.streams, tp.by_streams, tp.missing, sc.lab_scale,
               sc.lab_time
        FROM (SELECT DISTINCT g FROM r) k
        LEFT JOIN rr USING (g) LEFT JOIN icmp USING (g) LEFT JOIN tp USING (g)
        LEFT JOIN sc USING (g)
        ORDER BY k.g NULLS LAST
        """  # noqa: S608 -- fixed identifiers; values are parameters
        found = con.execute(sql, params).fetchall()
        rows = [list(row[:-3]) for row in found]
        # runs stopped early (adaptive) or cut short have an empty end summary: no total,
        # which is blank with a reason, never 0
        missing = sum(int(row[-3] or 0) for row in found)
        scaled = [(row[0], row[-2], row[-1]) for row in found if row[-2]]
    except duckdb.Error as exc:
        raise CatalogError(f"topology report failed: {exc}") from exc
    finally:
        con.close()
    return rows, missing, scaled


#: the labels :func:`topology_labels` gives per value: the $/month column's (seed 001's table)
#: and the lab gateway's cap (a public-vs-private comparison through an uncapped one says so)
PRICE_LABELS = ("price_per_hour", "instance_type", "region")


def topology_labels(
    catalog_dir: str | os.PathLike[str],
    by: str = "topology",
    campaign: str | None = None,
    keys: tuple[str, ...] = PRICE_LABELS,
) -> dict[Any, tuple[list[str], ...]]:
    """Per value of ``by``: for each label of ``keys`` (plain names), its distinct values
    over the value's complete runs, sorted."""
    con = connect(catalog_dir)
    try:
        expr, params = _Keys(con).resolve(by)
        where = " AND r.campaign = ?" if campaign else ""
        lists = ", ".join(f"list(DISTINCT json_extract_string(r.labels, '$.{k}'))" for k in keys)
        sql = f"""
        SELECT {expr} AS g, {lists}
        FROM runs r WHERE r.status = 'ok'{where} GROUP BY 1
        """  # noqa: S608 -- fixed identifiers; values are parameters
        found = con.execute(sql, [*params, *([campaign] if campaign else [])]).fetchall()
    except duckdb.Error as exc:
        raise CatalogError(f"topology report failed: {exc}") from exc
    finally:
        con.close()
    return {
        g: tuple(sorted(str(v) for v in (x or []) if v is not None) for x in lists)
        for g, *lists in found
    }
