"""``inventory import-terraform``, ``show`` and ``check``: fleets of SSH hosts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netfleet.runner.fleet import HostCheck
    from netfleet.spec.inventory import AnyHost


def inventory_import_terraform(file: str, *, output: str | None = None) -> str:
    """`terraform output -json` (or `tofu output -json`; ``file`` ``-`` is stdin) as an
    inventory (YAML text); ``output`` names the output that lists hosts (default
    ``netfleet_hosts``)."""
    from netfleet.spec.inventory import (
        inventory_from_terraform,
        inventory_yaml,
        read_terraform_json,
    )

    entries = inventory_from_terraform(read_terraform_json(file), output)
    return inventory_yaml(entries, source="terraform output" if file == "-" else file)


def inventory_show(inventory: str | os.PathLike[str]) -> dict[str, AnyHost]:
    """An inventory's hosts, validated (errors name the item, field and line)."""
    from netfleet.spec.inventory import load_inventory

    return load_inventory(Path(inventory))


def inventory_check(
    inventory: str | os.PathLike[str], *, install: bool = False, state_dir: Path | None = None
) -> list[HostCheck]:
    """Reach every host (SSH host keys verified, login), look for iperf3 and the tools netfleet
    needs; ``install`` missing ones with the host's package manager. ``HostCheck.ok`` is False
    for a host that is not ready."""
    from netfleet.api._aio import run_sync
    from netfleet.runner.fleet import check_fleet

    return run_sync(check_fleet(Path(inventory), install, state_dir))
