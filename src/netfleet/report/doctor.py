"""``netfleet doctor``'s findings as tables: hosts, client→server pairs, then the advice."""

from __future__ import annotations

from typing import Any

from netfleet.advice.model import Advice
from netfleet.report.advice import advice_table
from netfleet.tabular import Tabular


def doctor_tables(
    hosts: list[dict[str, Any]], pairs: list[dict[str, Any]], advice: list[Advice]
) -> list[Tabular]:
    """The doctor's host report, pair report and advice, in that order."""
    host_table = Tabular(
        ["host", "address", "cpus", "interface", "mtu", "driver", "tools", "capabilities",
         "offloads", "ena_counters"],
        [
            [h["host"], h["address"], h["cpus"], h["interface"], h["mtu"], h["driver"],
             {k: v for k, v in h["tools"].items() if v}, [k for k, v in h["capabilities"].items()
             if v], h["offloads"], h["ena_counters"]]
            for h in hosts
        ],
        title="Hosts",
    )  # fmt: skip
    pair_table = Tabular(
        ["client", "server", "address", "ping", "path_mtu", "interface_mtu", "port"],
        [
            [p["client"], p["server"], p["address"], p["ping"], p["path_mtu"],
             p["interface_mtu"], p["port_detail"]]
            for p in pairs
        ],
        title="Pairs",
    )  # fmt: skip
    return [host_table, pair_table, advice_table(advice)]
