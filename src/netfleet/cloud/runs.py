"""``netfleet run`` / ``plan`` on a campaign with a ``cloud:`` block: the cost guard before,
the cheat sheet with measured ÷ advertised and the cost line after.

The machines themselves are acquired and released by the host lifecycle
(:class:`netfleet.cloud.provider.AwsProvider`, host kind ``aws``); this module only prices and
summarises.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from netfleet.cloud import costs, prices
from netfleet.cloud.campaign import CloudSpec
from netfleet.cloud.journal import default_root
from netfleet.spec.cloud import AwsHostSpec
from netfleet.spec.models import CampaignSpec
from netfleet.tabular import Tabular


def cloud_spec(spec: CampaignSpec) -> CloudSpec | None:
    """The launch plan of a campaign's aws hosts (None: it has none)."""
    hosts = [h for h in spec.hosts.values() if isinstance(h, AwsHostSpec)]
    if not hosts or hosts[0].cloud is None:
        return None
    return CloudSpec.of_hosts(hosts[0].cloud, [(h.instance_type, h.role) for h in hosts])


def plan_cost(
    spec: CampaignSpec, estimated_seconds: float, state_root: Path | None = None
) -> costs.Priced | None:
    """The cost table for the campaign's instances, run time = the cloud block's
    ``duration_minutes`` or else the plan's estimate. None for a campaign without aws hosts."""
    cs = cloud_spec(spec)
    if cs is None:
        return None
    spot, why = costs.spot_prices(cs)
    minutes = cs.duration_minutes or estimated_seconds / 60
    priced = costs.plan(cs, prices.load(state_root or default_root()), minutes, spot)
    if why:
        priced.table.notes.append(why)
    return priced


def summary(
    spec: CampaignSpec,
    results: str,
    priced: costs.Priced | None,
    since: str,
    catalog: Path | None = None,
) -> tuple[Tabular, str]:
    """After the run: ingest the results, the cheat sheet of this session's runs (those that
    started at or after ``since``, the first one's ISO ``started_at``) by instance type and
    direction with measured ÷ advertised, and the cost line of what this session held."""
    from netfleet.catalog import ingest
    from netfleet.cloud.provider import AwsProvider
    from netfleet.hosts.registry import get_provider
    from netfleet.report.cheatsheet import cheatsheet, with_advertised
    from netfleet.store import open_root

    cs = cloud_spec(spec)
    assert cs is not None
    catalog = catalog or default_root() / cs.campaign / "catalog"
    ingest(open_root(results), catalog)
    start = dt.datetime.fromisoformat(since.replace("Z", "+00:00")).astimezone(dt.UTC)
    tab = cheatsheet(
        catalog,
        group_by=("instance_type", "direction"),
        campaign=spec.campaign,
        where=f"started_at >= TIMESTAMP '{start:%Y-%m-%d %H:%M:%S.%f}'",  # this session's runs
    )
    provider = get_provider("aws")
    held: list[tuple[str, float]] = []
    if isinstance(provider, AwsProvider):
        tab = with_advertised(tab, "instance_type", provider.advertised, scale=provider.rate_scale)
        held = [x for bill in provider.bills for x in bill.held_s]
    table = prices.load(default_root())
    line = costs.cost_line(
        table,
        cs.region,
        cs.market,
        held,
        None if priced is None else priced.estimate.usd,
        None if priced is None else priced.spot,
    )
    return tab, line
