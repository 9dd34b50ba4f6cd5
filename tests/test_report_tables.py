"""Report tables from real library values: the doctor's report of this machine, lab profiles."""

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


def test_lab_profiles_table_lists_the_shipped_profiles() -> None:
    from netfleet.report.lab import lab_profiles_table

    rows = {r["profile"]: r for r in lab_profiles_table().records()}
    assert rows["demo"]["hosts"] == 4 and rows["demo"]["description"]


def test_lab_hosts_table_of_no_lab_is_empty() -> None:
    from netfleet.report.lab import lab_hosts_table

    table = lab_hosts_table([])
    assert table.rows == [] and table.columns[:2] == ["lab", "host"]
