"""Host providers by kind. Adding a kind = one module with a Provider + one line in PROVIDERS.

Entries are ``"module:Class"`` strings imported on first use: a command that never meets an SSH
host never loads asyncssh. A provider that lives higher in the layering (the AWS provider in
``netfleet.cloud``) or in another package is an entry point of group :data:`ENTRY_POINT_GROUP`
(``[project.entry-points."netfleet.hosts"]`` in pyproject.toml: ``aws`` →
``netfleet.cloud.aws.provider:AwsProvider``), so ``hosts`` names nothing above it.
``register_provider`` adds or replaces one at run time (plugins, tests).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from netfleet.errors import HostError
from netfleet.hosts.base import Host
from netfleet.hosts.provider import AttachProvider, HostRequest, Provider

#: provider name (= the spec's host ``kind``) → "module:Class", for the kinds of this layer
PROVIDERS: dict[str, str] = {
    "local": "netfleet.hosts.local:LocalProvider",
    "netns": "netfleet.hosts.netns:NetnsProvider",
    "ssh": "netfleet.hosts.ssh:SshProvider",
}
#: the entry point group naming the other providers (kind → "module:Class")
ENTRY_POINT_GROUP = "netfleet.hosts"


def _entry_point(name: str) -> Callable[[], Provider] | None:
    found = entry_points(group=ENTRY_POINT_GROUP, name=name)
    return next((ep.load() for ep in found), None)


_registered: dict[str, Callable[[], Provider]] = {}
_instances: dict[str, Provider] = {}


def register_provider(name: str, factory: Callable[[], Provider]) -> None:
    """Add (or replace) the provider of host kind ``name``."""
    _registered[name] = factory
    _instances.pop(name, None)


def get_provider(name: str) -> Provider:
    """The provider of host kind ``name`` (one instance per process); HostError if unknown."""
    if name in _instances:
        return _instances[name]
    factory = _registered.get(name)
    target = PROVIDERS.get(name)
    if factory is None and target is not None:
        module, _, cls = target.partition(":")
        factory = getattr(importlib.import_module(module), cls)
    if factory is None:
        factory = _entry_point(name)
    if factory is None:
        plugged = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
        known = ", ".join(sorted({*PROVIDERS, *_registered, *plugged}))
        raise HostError(
            f"no host provider {name!r}",
            hint=f"use one of the known kinds: {known} (a kind another package provides is "
            "found through its installed entry points: reinstall it, e.g. `uv sync`)",
        )
    provider = factory()
    _instances[name] = provider
    return provider


def build_host(name: str, spec: Any, lab_state_dir: Path | None = None) -> Host:
    """A ready-to-use Host of an attach-style kind (no lease: for commands such as ``doctor``
    and ``inventory check`` that only look). Lab hosts are resolved through the lab's state
    (LabError if down); their lab labels are merged under the spec's own labels."""
    provider = get_provider(str(spec.kind))
    if not isinstance(provider, AttachProvider):
        raise HostError(
            f"host {name}: kind {spec.kind!r} is created per campaign",
            hint="use it in `netfleet run`, which acquires and releases it",
        )
    return provider.build(HostRequest(name, spec, lab_state_dir))
