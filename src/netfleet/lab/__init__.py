"""The lab: an emulated cloud on one machine, made of Linux network namespaces.

A switch namespace with a bridge, one namespace per host, tbf shapers for steady and credit
(burst) links. Only addresses from 198.18.0.0/15 are used. See docs/lab.md.

    spec = load_lab("demo")
    up(spec)
    host = resolve_host("demo", "steady")   # namespace nf-demo-steady, address 198.18.0.2
    status("demo"); down("demo")
"""

from __future__ import annotations

from netfleet.lab.inspection import HostStatus, LabStatus, QdiscStats, labs, resolve_host, status
from netfleet.lab.models import HostSpec, LabSpec, Scale, Shaper, lab_schema
from netfleet.lab.profiles import load_lab, profiles
from netfleet.lab.state import LabHost, LabState
from netfleet.lab.topology import down, plan, up

__all__ = [
    "HostSpec",
    "HostStatus",
    "LabHost",
    "LabSpec",
    "LabState",
    "LabStatus",
    "QdiscStats",
    "Scale",
    "Shaper",
    "down",
    "lab_schema",
    "labs",
    "load_lab",
    "plan",
    "profiles",
    "resolve_host",
    "status",
    "up",
]
