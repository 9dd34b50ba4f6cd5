"""One way to reach AWS (or an S3/EC2-compatible emulator): boto3 clients built here only.

Credentials come from boto3's standard chain (environment, shared files, instance role) and never
from a spec. ``AWS_ENDPOINT_URL`` (boto3's own variable) points every client at an emulator or an
S3-compatible store. With ``NETFLEET_AWS_LOOPBACK_ONLY=1`` — set by the test suite — a client
whose endpoint is not a loopback address is refused before any request is sent, so no test can
ever reach a real AWS account.
"""

from __future__ import annotations

import ipaddress
import os
import threading
from typing import Any
from urllib.parse import urlsplit

from netfleet import plugins
from netfleet.errors import EnvironmentProblem

LOOPBACK_ONLY_ENV = "NETFLEET_AWS_LOOPBACK_ONLY"
#: botocore's adaptive mode (client-side rate limiting when AWS throttles) with more attempts
#: than its default 3: a campaign makes bursts of calls, and RequestLimitExceeded is per account
RETRY_ATTEMPTS = 10
_loader: Any = None
_loader_lock = threading.Lock()


def endpoint_url(service: str) -> str | None:
    """The endpoint override for ``service``: ``AWS_ENDPOINT_URL_<SERVICE>`` then
    ``AWS_ENDPOINT_URL`` (boto3's names), or None for AWS itself."""
    specific = os.environ.get(f"AWS_ENDPOINT_URL_{service.upper().replace('-', '_')}")
    return specific or os.environ.get("AWS_ENDPOINT_URL") or None


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_endpoint(service: str, url: str | None) -> None:
    """Refuse a non-loopback endpoint when the loopback-only guard is on."""
    if os.environ.get(LOOPBACK_ONLY_ENV) != "1":
        return
    if url is None or not is_loopback_url(url):
        raise EnvironmentProblem(
            f"refusing to reach AWS {service} at {url or 'its public endpoint'}: "
            f"{LOOPBACK_ONLY_ENV}=1 allows only a loopback endpoint",
            hint="set AWS_ENDPOINT_URL to the local emulator (e.g. http://127.0.0.1:PORT)",
        )


def _retries() -> Any:
    from botocore.config import Config

    return Config(retries={"mode": "adaptive", "total_max_attempts": RETRY_ATTEMPTS})


def client(service: str, region: str | None = None, **kwargs: Any) -> Any:
    """A boto3 client for ``service`` honouring the endpoint override and the guard."""
    import boto3  # heavy: only when AWS is used

    url = kwargs.pop("endpoint_url", None) or endpoint_url(service)
    check_endpoint(service, url)
    given = kwargs.pop("config", None)
    config = _retries().merge(given) if given is not None else _retries()
    session = boto3.session.Session(botocore_session=_botocore_session())
    return session.client(service, region_name=region, endpoint_url=url, config=config, **kwargs)


def _botocore_session() -> Any:
    """A new botocore session (credentials and config read afresh each time) sharing one data
    loader: the service models (EC2's is megabytes of JSON) are parsed once per process, not
    once per client — a client then costs ~30 ms instead of ~250 ms."""
    import botocore.loaders
    import botocore.session

    global _loader
    with _loader_lock:
        if _loader is None:
            _loader = botocore.loaders.create_loader()
        loader = _loader
    session = botocore.session.get_session()
    session.register_component("data_loader", loader)
    plugins.session_created(session)  # a seam for test tooling (netfleet_sim); no-op otherwise
    return session
