"""One way to reach AWS (or an S3/EC2-compatible emulator): boto3 clients built here only.

Credentials come from boto3's standard chain (environment, shared files, instance role) and never
from a spec. ``AWS_ENDPOINT_URL`` (boto3's own variable) points every client at an emulator or an
S3-compatible store. With ``NETFLEET_AWS_LOOPBACK_ONLY=1`` — set by the test suite — a client
whose endpoint is not a loopback address is refused before any request is sent, so no test can
ever reach a real AWS account.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import threading
from collections import OrderedDict
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
#: the clients made (see :func:`client`), least recently used first
CLIENTS_KEPT = 64
_clients: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_clients_lock = threading.Lock()
#: what boto3 reads from the environment and the disk when it makes a client
_SETUP_PREFIXES = ("AWS_", "NETFLEET_", "BOTO_")
_SETUP_FILES = (("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"),
                ("AWS_CONFIG_FILE", "~/.aws/config"))  # fmt: skip


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
    """A boto3 client for ``service`` honouring the endpoint override and the guard.

    The same client is returned again for the same service, region, endpoint, options and
    AWS setup (the ``AWS_*``/``NETFLEET_*``/``BOTO_*`` environment and the contents of the
    shared credentials and config files now): boto3's clients are thread-safe, and making one
    costs ~20 ms of CPU (a class of ~700 methods for EC2) — more than half of a ``cloud up``'s
    CPU went there. A changed variable or file gives a new client, so credentials are still
    read as they are at the call; a forked child makes its own."""
    url = kwargs.pop("endpoint_url", None) or endpoint_url(service)
    check_endpoint(service, url)
    given = kwargs.pop("config", None)
    key = _client_key(service, region, url, given, kwargs)
    with _clients_lock:
        made = _clients.get(key)
        if made is not None:
            _clients.move_to_end(key)
            return made
    import boto3  # heavy: only when AWS is used

    config = _retries().merge(given) if given is not None else _retries()
    session = boto3.session.Session(botocore_session=_botocore_session())
    made = session.client(service, region_name=region, endpoint_url=url, config=config, **kwargs)
    with _clients_lock:
        _clients[key] = made
        while len(_clients) > CLIENTS_KEPT:
            _clients.popitem(last=False)
    return made


def _client_key(
    service: str, region: str | None, url: str | None, config: Any, kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """What a client depends on: its arguments and the AWS setup boto3 reads when making it."""
    options = None if config is None else repr(sorted(vars(config).items()))
    setup = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_SETUP_PREFIXES)))
    files = []
    for name, default in _SETUP_FILES:  # a few hundred bytes each: read, not trusted by mtime
        path = os.path.expanduser(os.environ.get(name, default))
        try:
            with open(path, "rb") as f:
                files.append((path, hashlib.sha256(f.read()).hexdigest()))
        except OSError:
            files.append((path, ""))
    return (service, region, url, options, repr(sorted(kwargs.items())), setup, tuple(files))


def _forget_clients() -> None:
    """In a forked child: its parent's clients (and their connections) are not its own."""
    global _clients_lock
    _clients.clear()
    _clients_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_clients)


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
