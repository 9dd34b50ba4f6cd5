"""Labs as tables: ``netfleet lab status`` and ``netfleet lab profiles``."""

from __future__ import annotations

from netfleet.lab import LabStatus, load_lab, profiles
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
    return Tabular(
        ["lab", "host", "namespace", "address", "mtu", "exists", "shaping", "procs", "labels"], rows
    )


def lab_profiles_table() -> Tabular:
    """The lab profiles shipped with netfleet: name, hosts, description."""
    rows = []
    for name in profiles():
        spec = load_lab(name)
        rows.append([name, len(spec.hosts), spec.description or ""])
    return Tabular(["profile", "hosts", "description"], rows)
