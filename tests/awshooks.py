"""AWS's real error shapes in front of moto, through botocore's own event hooks (``before-call``).

A minimal kit for the tests of issue 24 item 6 (eventual consistency, throttling, capacity,
MISSING): :func:`hooked` wraps :func:`netfleet.aws.client` so that every client netfleet builds
gets the test's handlers; a handler returning :func:`error` answers the call with that AWS error
instead of sending it to moto (the client then raises exactly what AWS would make it raise).
The fuller fault-injection layer (profiles, a proxy) is tests/ work of its own; this stays small
so both can merge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from netfleet import aws

Handler = Callable[..., Any]


@dataclass
class _Http:
    """What botocore reads from a short-circuited response: its status."""

    status_code: int
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes = b""


def error(code: str, message: str = "", status: int = 400) -> tuple[_Http, dict[str, Any]]:
    """A ``before-call`` answer: AWS's error ``code`` (the shape botocore parses from AWS)."""
    return _Http(status), {
        "Error": {"Code": code, "Message": message or code},
        "ResponseMetadata": {"HTTPStatusCode": status, "RequestId": "injected"},
    }


def answer(parsed: dict[str, Any]) -> tuple[_Http, dict[str, Any]]:
    """A ``before-call`` answer: a successful response with this (parsed) body."""
    meta = {"HTTPStatusCode": 200, "RequestId": "injected"}
    return _Http(200), {**parsed, "ResponseMetadata": meta}


@dataclass
class Calls:
    """Every operation the hooked clients made (service, operation, params)."""

    seen: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def ops(self, operation: str) -> list[dict[str, Any]]:
        return [p for _, op, p in self.seen if op == operation]


@contextmanager
def hooked(
    monkeypatch: pytest.MonkeyPatch, handlers: dict[str, Handler] | None = None
) -> Iterator[Calls]:
    """Every client netfleet makes meanwhile records its calls and runs ``handlers``
    (``{"ec2.DescribeInstances": fn(params) -> error(...) | None}``)."""
    calls = Calls()
    real = aws.client
    made: list[Any] = []  # the clients hooked (netfleet's are shared: aws.client keeps them)

    def keep(model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["netfleet_test_params"] = dict(params)  # the call's API parameters

    def before(model: Any, context: dict[str, Any], **_: Any) -> Any:
        params = context.get("netfleet_test_params", {})
        service = model.service_model.service_name
        calls.seen.append((service, model.name, params))
        handler = (handlers or {}).get(f"{service}.{model.name}")
        return handler(params) if handler else None

    def client(service: str, region: str | None = None, **kwargs: Any) -> Any:
        one = real(service, region, **kwargs)
        if not any(one is m for m in made):
            one.meta.events.register_last("before-parameter-build.*.*", keep)
            one.meta.events.register_first("before-call.*.*", before)
            made.append(one)
        return one

    monkeypatch.setattr(aws, "client", client)
    try:
        yield calls
    finally:  # a client kept by aws.client outlives the test: it leaves unhooked
        for one in made:
            one.meta.events.unregister("before-parameter-build.*.*", keep)
            one.meta.events.unregister("before-call.*.*", before)


def first_n(n: int, answer: Any) -> Handler:
    """A handler answering the first ``n`` calls with ``answer``, then letting calls through."""
    count = [0]

    def handle(params: dict[str, Any]) -> Any:
        count[0] += 1
        return answer if count[0] <= n else None

    return handle
