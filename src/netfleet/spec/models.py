"""The campaign spec: hosts, tests, a parameter matrix, repeats, cooldown and order.

A spec is declarative YAML checked by these pydantic models (``netfleet schema`` prints the JSON
Schema). Every string that later becomes part of a command line is validated here against a
strict pattern, and commands are always argv lists: nothing from a spec ever reaches a shell.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from netfleet.units import parse_rate, parse_size

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
LABEL_KEY = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
LabelValue = str | int | float | bool | None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_labels(labels: dict[str, Any]) -> dict[str, Any]:
    for key in labels:
        if not re.match(LABEL_KEY, key):
            raise ValueError(
                f"label key {key!r} is not allowed: use letters, digits, '_', '.', '-' and start "
                "with a letter or '_'"
            )
    return labels


# ----------------------------------------------------------------------------------------- hosts
class LocalHostSpec(_Strict):
    """This machine, over loopback."""

    kind: Literal["local"]
    address: str = "127.0.0.1"
    labels: dict[str, LabelValue] = Field(default_factory=dict)

    _labels = field_validator("labels")(_check_labels)

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        try:
            ip = ipaddress.ip_address(v)
        except ValueError as exc:
            raise ValueError(f"{v!r} is not an IP address") from exc
        if not ip.is_loopback:
            raise ValueError(f"{v} is not a loopback address: a local host talks over 127.0.0.0/8")
        return v


class NetnsHostSpec(_Strict):
    """A Linux network namespace on this machine: one a netfleet lab made (``lab`` + ``host``) or
    one you built yourself (``namespace`` + ``address``)."""

    kind: Literal["netns"]
    lab: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9-]{0,11}$",
        description="name of a lab brought up with 'netfleet lab up'",
    )
    host: str | None = Field(
        None, pattern=r"^[a-z][a-z0-9-]{0,9}$", description="host name inside that lab"
    )
    namespace: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        description="an existing namespace (ip netns list)",
    )
    address: str | None = Field(None, description="the address the peer reaches it on")
    labels: dict[str, LabelValue] = Field(default_factory=dict)

    _labels = field_validator("labels")(_check_labels)

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            ipaddress.ip_address(v)
        except ValueError as exc:
            raise ValueError(f"{v!r} is not an IP address") from exc
        return v

    @model_validator(mode="after")
    def _one_way(self) -> NetnsHostSpec:
        by_lab = self.lab is not None or self.host is not None
        by_ns = self.namespace is not None
        if by_lab and by_ns:
            raise ValueError("give either lab + host, or namespace + address, not both")
        if by_lab and (self.lab is None or self.host is None):
            raise ValueError("a lab host needs both 'lab' and 'host'")
        if by_ns and self.address is None:
            raise ValueError("a namespace you built needs 'address' (the IP its peers reach)")
        if not by_lab and not by_ns:
            raise ValueError("say which namespace: 'lab' + 'host', or 'namespace' + 'address'")
        if by_lab and self.address is not None:
            raise ValueError("a lab host's address comes from the lab: remove 'address'")
        return self


HostSpec = Annotated[LocalHostSpec | NetnsHostSpec, Field(discriminator="kind")]


# ---------------------------------------------------------------------------------------- params
def _size_str(v: str | int | None) -> str | None:
    if v is None:
        return None
    parse_size(v)
    return str(v)


class Iperf3Params(_Strict):
    """iperf3 client options. ``direction`` is relative to the test's subject host."""

    duration: float = Field(10, gt=0, le=86400, description="seconds of measurement (-t)")
    omit: int = Field(0, ge=0, le=3600, description="seconds omitted at the start (-O)")
    interval: float = Field(1, ge=0.1, le=3600, description="report interval in seconds (-i)")
    parallel: int = Field(1, ge=1, le=128, description="parallel streams (-P)")
    direction: Literal["out", "in", "bidir"] = Field(
        "out", description="out: the subject sends; in: it receives; bidir: both (--bidir)"
    )
    protocol: Literal["tcp", "udp"] = "tcp"
    bitrate: str | None = Field(
        None, description="target bitrate, e.g. 500mbit (-b); UDP default 1mbit"
    )
    window: str | int | None = Field(None, description="socket buffer size, e.g. 512kb (-w)")
    length: str | int | None = Field(None, description="read/write buffer length, e.g. 128kb (-l)")
    mss: int | None = Field(None, ge=88, le=65535, description="TCP maximum segment size (-M)")
    congestion: str | None = Field(
        None, pattern=r"^[a-z0-9_]{1,16}$", description="TCP congestion control algorithm (-C)"
    )
    affinity: str | None = Field(
        None, pattern=r"^[0-9]{1,4}(,[0-9]{1,4})?$", description="CPU affinity n or n,m (-A)"
    )
    zerocopy: bool = Field(False, description="use sendfile (-Z)")

    @field_validator("bitrate")
    @classmethod
    def _bitrate(cls, v: str | None) -> str | None:
        if v is not None:
            parse_rate(v)
        return v

    _sizes = field_validator("window", "length")(_size_str)


MATRIX_KEYS = {"client", "server", *Iperf3Params.model_fields}


class TestSpec(_Strict):
    """One test: an engine between a client and a server, expanded over a matrix."""

    name: str = Field(pattern=NAME)
    engine: Literal["iperf3"] = "iperf3"
    client: str | None = Field(None, description="host name (or put 'client' in the matrix)")
    server: str | None = Field(None, description="host name (or put 'server' in the matrix)")
    subject: Literal["client", "server"] = Field(
        "client", description="the host under test: its labels group results; direction is its"
    )
    params: Iperf3Params = Field(default_factory=lambda: Iperf3Params())
    matrix: dict[str, list[Any]] = Field(
        default_factory=dict, description="parameter → list of values; the product runs"
    )
    exclude: list[dict[str, Any]] = Field(
        default_factory=list, description="combinations to drop (partial match)"
    )
    include: list[dict[str, Any]] = Field(
        default_factory=list, description="extra combinations to add"
    )
    labels: dict[str, LabelValue] = Field(default_factory=dict)
    timeout: float | None = Field(
        None, gt=0, description="per-run limit; default duration+omit+30 s"
    )

    _labels = field_validator("labels")(_check_labels)

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in v.items():
            if key not in MATRIX_KEYS:
                raise ValueError(
                    f"matrix key {key!r} is not a parameter: use one of "
                    + ", ".join(sorted(MATRIX_KEYS))
                )
            if not values:
                raise ValueError(f"matrix key {key!r} has no values: give at least one")
            if len({repr(x) for x in values}) != len(values):
                raise ValueError(f"matrix key {key!r} repeats a value: list each value once")
        return v

    @field_validator("exclude", "include")
    @classmethod
    def _combos(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for combo in v:
            bad = set(combo) - MATRIX_KEYS
            if bad:
                raise ValueError(
                    f"unknown parameter(s) {sorted(bad)}: use " + ", ".join(sorted(MATRIX_KEYS))
                )
        return v


class CampaignSpec(_Strict):
    """A campaign: which hosts, which tests, how often, in which order."""

    campaign: str = Field(pattern=NAME, description="name; results go under campaign=NAME")
    description: str | None = None
    results: str | None = Field(None, description="results root (path or URL); CLI --results wins")
    labels: dict[str, LabelValue] = Field(default_factory=dict)
    hosts: dict[str, HostSpec]
    tests: list[TestSpec] = Field(min_length=1)
    repeats: int = Field(1, ge=1, le=10000)
    cooldown: float = Field(0, ge=0, le=86400, description="seconds of idle between runs")
    order: Literal["as-written", "shuffled"] = "as-written"
    seed: int = Field(0, description="seed for order: shuffled")

    _labels = field_validator("labels")(_check_labels)

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, v: dict[str, Any]) -> dict[str, Any]:
        if not v:
            raise ValueError("list at least one host")
        for name in v:
            if not re.match(NAME, name):
                raise ValueError(f"host name {name!r}: use letters, digits, '.', '_', '-'")
        return v

    @model_validator(mode="after")
    def _references(self) -> CampaignSpec:
        names = [t.name for t in self.tests]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"test names must be unique: {dupes} repeat")
        for t in self.tests:
            for role in ("client", "server"):
                fixed = getattr(t, role)
                listed = t.matrix.get(role, [])
                if fixed is None and not listed:
                    raise ValueError(
                        f"test {t.name!r} has no {role}: set '{role}:' or matrix.{role}"
                    )
                for h in ([fixed] if fixed else []) + list(listed):
                    if h not in self.hosts:
                        raise ValueError(
                            f"test {t.name!r}: {role} {h!r} is not in hosts "
                            f"(known: {', '.join(sorted(self.hosts))})"
                        )
        return self
