"""netfleet — measure what cloud networks really deliver.

Everything the CLI does is available from Python::

    import netfleet
    spec = netfleet.load_spec("campaign.yaml")
    runs = netfleet.expand(spec)
"""

__version__ = "0.1.0"

from netfleet.errors import ExitStatus, NetfleetError
from netfleet.plan import expand
from netfleet.spec import load_spec

__all__ = ["ExitStatus", "NetfleetError", "__version__", "expand", "load_spec"]
