"""Whose resources these are, as EC2 sees it: the campaign's and the installation's tags
(:mod:`netfleet.cloud.owner`) as the ``Filters`` of EC2's Describe calls."""

from __future__ import annotations

from typing import Any

from netfleet.cloud.owner import TAG_CAMPAIGN, TAG_INSTALLATION


def owned(campaign: str, installation_id: str | None) -> list[dict[str, Any]]:
    """EC2 Describe filters: the campaign's tag, and (unless None: every owner) the
    installation's."""
    out = [{"Name": f"tag:{TAG_CAMPAIGN}", "Values": [campaign]}]
    if installation_id is not None:
        out.append({"Name": f"tag:{TAG_INSTALLATION}", "Values": [installation_id]})
    return out
