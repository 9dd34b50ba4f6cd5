"""netfleet — measure what cloud networks really deliver.

Everything the CLI does is one function of :mod:`netfleet.api` (docs/api.md)::

    from netfleet import api
    plan = api.plan("campaign.yaml")                  # netfleet plan campaign.yaml
    outcome = api.run("campaign.yaml", max_cost=2.0)  # netfleet run … --max-cost 2
    sheet = api.cheatsheet(by="instance_type")        # netfleet cheatsheet --by instance_type

Names are imported on first use, so ``import netfleet`` (and ``netfleet --version``) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name → module that defines it (imported lazily by ``__getattr__``).
_LAZY = {
    "ExitStatus": "netfleet.errors",
    "NetfleetError": "netfleet.errors",
    "expand": "netfleet.plan",
    "load_spec": "netfleet.spec",
    "api": "netfleet.api",
}

if TYPE_CHECKING:
    import netfleet.api as api
    from netfleet.errors import ExitStatus, NetfleetError
    from netfleet.plan import expand
    from netfleet.spec import load_spec

__all__ = ["ExitStatus", "NetfleetError", "__version__", "api", "expand", "load_spec"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'netfleet' has no attribute {name!r}")
    if name == "api":
        return importlib.import_module(module)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
