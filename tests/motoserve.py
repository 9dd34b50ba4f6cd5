"""``python tests/motoserve.py -H HOST -p PORT``: moto's server (``python -m moto.server``) with
one gap to AWS closed, the one the suite paid for on every ``netfleet run``.

DescribeInstanceTypes: AWS honours ``MaxResults`` (5-100) and answers ``NextToken`` for the rest;
moto ignores both and renders all of its ~900 instance types, 2.5-4 s of the server's CPU per
call — netfleet's permission probe (``describe_instance_types(MaxResults=5)``,
netfleet.cloud.aws.plan.permissions) makes that call twice per run. Here the page is cut as
AWS cuts it; the filters, the ``InstanceTypes`` check and moto's IAM check run as before.
"""

from __future__ import annotations

from typing import Any


def _paginated_instance_types() -> None:
    from moto.core.responses import ActionResult
    from moto.ec2.responses.instances import InstanceResponse

    def describe_instance_types(self: Any) -> ActionResult:
        found = self.ec2_backend.describe_instance_types(
            self._get_param("InstanceTypes", []), self._filters_from_querystring()
        )
        result: dict[str, Any] = {"InstanceTypes": found}
        size = self._get_int_param("MaxResults")
        if size:
            token = self._get_param("NextToken")
            start = int(token) if token and str(token).isdigit() else 0
            result["InstanceTypes"] = found[start : start + size]
            if start + size < len(found):
                result["NextToken"] = str(start + size)
        return ActionResult(result)

    InstanceResponse.describe_instance_types = describe_instance_types  # type: ignore[method-assign]


if __name__ == "__main__":
    from moto.server import main

    _paginated_instance_types()
    main()
