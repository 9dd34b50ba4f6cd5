"""Inventories as tables: ``netfleet inventory show`` and ``netfleet inventory check``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from netfleet.tabular import Tabular


def inventory_table(hosts: Mapping[str, Any], title: str | None = None) -> Tabular:
    """One row per host of an inventory (name → host spec model)."""
    rows = []
    for name, spec in hosts.items():
        d = spec.model_dump()
        jump = d.get("jump") or {}
        rows.append(
            [
                name,
                d["kind"],
                d.get("address"),
                d.get("ssh_address") or "",
                d.get("user") or "",
                d.get("port") or "",
                f"{jump.get('address')}:{jump.get('port')}" if jump else "",
                d.get("labels") or {},
            ]
        )
    columns = ["name", "kind", "address", "ssh_address", "user", "port", "jump", "labels"]
    columns = ["name", "kind", "address", "ssh_address", "user", "port", "jump", "labels"]
    return Tabular(columns, rows, title=title)


def fleet_check_table(results: Iterable[Any]) -> Tabular:
    """One row per checked host: reached and ready, the iperf3 found, and why not."""
    rows = [
        [r.name, r.kind, r.address, "ok" if r.ok else "NO", r.iperf3, r.detail] for r in results
    ]
    return Tabular(["host", "kind", "address", "ready", "iperf3", "detail"], rows)
