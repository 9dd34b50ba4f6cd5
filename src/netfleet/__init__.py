"""netfleet — measure what cloud networks really deliver.

Everything the CLI does is available from Python (:mod:`netfleet.api`)::

    import netfleet
    spec = netfleet.load_spec("campaign.yaml")
    runs = netfleet.expand(spec)

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
