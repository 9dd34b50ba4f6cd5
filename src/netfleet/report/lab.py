"""Labs as tables: ``netfleet lab status`` and ``netfleet lab profiles``."""

from __future__ import annotations

from collections.abc import Mapping

from netfleet.lab import LabSpec, LabStatus, load_lab, profiles
from netfleet.tabular import Tabular


def lab_hosts_table(labs: list[LabStatus]) -> Tabular:
    """One row per host of each lab: namespace, address, MTU, shaping, processes, labels."""
    rows = []
    for st in labs:
        for h in st.hosts:
            rows.append(
                [
                    st.name,
                    h.name,
                    h.namespace,
                    h.address,
                    h.mtu,
                    "yes" if h.exists else "MISSING",
                    h.shaping,
                    h.processes,
                    ", ".join(f"{k}={v}" for k, v in sorted(h.labels.items())),
                ]
            )
    notes = (
        ["not root: read from the state files only; procs and shaper counters need root"]
        if any(not st.live for st in labs)
        else []
    )
    return Tabular(
        ["lab", "host", "namespace", "address", "mtu", "exists", "shaping", "procs", "labels"],
        rows,
        notes=notes,
    )


def lab_profiles_table(specs: Mapping[str, LabSpec] | None = None) -> Tabular:
    """The lab profiles shipped with netfleet (or ``specs``, name → lab): name, hosts,
    description."""
    if specs is None:
        specs = {name: load_lab(name) for name in profiles()}
    rows = [[name, len(spec.hosts), spec.description or ""] for name, spec in specs.items()]
    return Tabular(["profile", "hosts", "description"], rows)
