"""``netfleet doctor``'s tables, from a real doctor report of this machine (the local host)."""

from __future__ import annotations

import asyncio

from netfleet.doctor.checks import host_report
from netfleet.hosts.local import LocalHost
from netfleet.report.doctor import doctor_tables
from netfleet.report.output import render


def test_doctor_tables_render_a_real_host_report() -> None:
    host = asyncio.run(host_report(LocalHost("local", "127.0.0.1")))
    hosts, pairs, advice = doctor_tables([host], [], [])
    assert hosts.records()[0]["host"] == "local"
    assert hosts.columns[:3] == ["host", "address", "cpus"]
    assert pairs.rows == [] and advice.title == "Advice"
    assert '"host": "local"' in render(hosts, "json")
