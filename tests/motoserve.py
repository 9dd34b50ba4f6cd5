"""``python tests/motoserve.py -H HOST -p PORT``: moto's server (``python -m moto.server``) with
one gap to AWS closed, the one the suite paid for on every ``netfleet run``.

DescribeInstanceTypes and DescribeSpotPriceHistory: AWS honours ``MaxResults`` and answers
``NextToken`` for the rest; moto ignores both and renders every instance type (~900) or every
zone's offering — 2.5-4 s of the server's CPU for DescribeInstanceTypes, 0.5 s for the spot
history. netfleet's permission probe (netfleet.cloud.aws.plan.permissions) asks each for 5,
twice per run. Here the page is cut as AWS cuts it; the filters, the ``InstanceTypes`` check and
moto's IAM check run as before. Two of moto's per-request costs are paid once (``patch``).
"""

from __future__ import annotations

from typing import Any


def _page(self: Any, items: list[Any]) -> tuple[list[Any], str | None]:
    """``items`` cut to the request's ``MaxResults`` from its ``NextToken`` (an offset here),
    and the token of the next page (None at the end, or when no MaxResults was asked)."""
    size = self._get_int_param("MaxResults")
    if not size:
        return items, None
    token = self._get_param("NextToken")
    start = int(token) if token and str(token).isdigit() else 0
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def patch() -> None:
    """moto's responses paginated as above, and two of its per-request costs paid once (before
    its server starts): every request listed moto's package directory (a ``listdir`` and an
    ``isdir`` per service, ~15 % of the server's CPU) to tell a service's name from a host, and
    listed its handler class's functions with ``inspect.getmembers`` (~8 %). Both answers are
    fixed once moto is imported and the methods below are in place. And a region's backend is
    made without the ECS-optimised images (below); the rest of moto runs as it is."""
    import functools

    from moto import backends
    from moto.core import responses
    from moto.core.responses import ActionResult
    from moto.ec2.models import amis
    from moto.ec2.responses.instances import InstanceResponse
    from moto.ec2.responses.spot_instances import SpotInstances

    def describe_instance_types(self: Any) -> ActionResult:
        found = self.ec2_backend.describe_instance_types(
            self._get_param("InstanceTypes", []), self._filters_from_querystring()
        )
        page, token = _page(self, found)
        return ActionResult({"InstanceTypes": page, **({"NextToken": token} if token else {})})

    def describe_spot_price_history(self: Any) -> ActionResult:
        found = self.ec2_backend.describe_spot_price_history(
            self._get_param("InstanceTypes", []), self._filters_from_querystring()
        )
        page, token = _page(self, found)
        history = [  # moto's own answer (moto.ec2.responses.spot_instances), for the page only
            {
                "InstanceType": p["InstanceType"],
                "ProductDescription": "Linux/UNIX (Amazon VPC)",
                "SpotPrice": "0.00001",
                "AvailabilityZone": p["Location"],
                "Timestamp": "2006-01-02T15:04:05.999999999Z",
            }
            for p in page
        ]
        return ActionResult(
            {"SpotPriceHistory": history, **({"NextToken": token} if token else {})}
        )

    InstanceResponse.describe_instance_types = describe_instance_types  # type: ignore[method-assign]
    SpotInstances.describe_spot_price_history = describe_spot_price_history  # type: ignore[method-assign]
    modules = tuple(backends.list_of_moto_modules())
    real_load = amis.load_resource

    def load_resource(name: str, *args: Any, **kwargs: Any) -> Any:
        """No ECS-optimised AMIs (1,227 a region, each an image, a volume and a snapshot made
        again at every reset: ~80 % of a reset's CPU): netfleet never looks one up (Fargate
        has no image of ours; its instances are Debian or AL2023, which stay)."""
        return [] if "/ecs/optimized_amis/" in name else real_load(name, *args, **kwargs)

    amis.load_resource = load_resource
    backends.list_of_moto_modules = lambda: modules
    responses.method_names_from_class = functools.cache(responses.method_names_from_class)


def serve() -> None:
    """moto's server, paginated, on the command line's ``-H HOST -p PORT``."""
    from moto.server import main

    patch()
    main()


if __name__ == "__main__":
    serve()
