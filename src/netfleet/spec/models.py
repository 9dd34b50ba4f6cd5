"""The campaign spec: hosts, tests, a parameter matrix, repeats, cooldown and order.

A spec is declarative YAML checked by these pydantic models (``netfleet schema`` prints the JSON
Schema). Every string that later becomes part of a command line is validated here against a
strict pattern, and commands are always argv lists: nothing from a spec ever reaches a shell.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from netfleet.spec.params import EngineParams, Iperf3Params

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


ROLE_KEYS = ("client", "server")


class TestBase(_Strict):
    """One test: an engine between a client and a server, expanded over a matrix. Each engine
    has a subclass that fixes ``engine`` and the type of ``params``."""

    name: str = Field(pattern=NAME)
    engine: str
    client: str | None = Field(None, description="host name (or put 'client' in the matrix)")
    server: str | None = Field(None, description="host name (or put 'server' in the matrix)")
    subject: Literal["client", "server"] = Field(
        "client", description="the host under test: its labels group results; direction is its"
    )
    params: EngineParams
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

    @classmethod
    def matrix_keys(cls) -> set[str]:
        params = cls.model_fields["params"].annotation
        assert isinstance(params, type) and issubclass(params, EngineParams)
        return {*ROLE_KEYS, *params.model_fields}

    def engine_params(self, overrides: dict[str, Any]) -> EngineParams:
        """The params of one combination: the base ``params`` with matrix values applied."""
        base = self.params.model_dump(exclude_unset=True)
        return type(self.params).model_validate({**base, **overrides})

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        keys = cls.matrix_keys()
        for key, values in v.items():
            if key not in keys:
                raise ValueError(
                    f"matrix key {key!r} is not a parameter of this engine: use one of "
                    + ", ".join(sorted(keys))
                )
            if not values:
                raise ValueError(f"matrix key {key!r} has no values: give at least one")
            if len({repr(x) for x in values}) != len(values):
                raise ValueError(f"matrix key {key!r} repeats a value: list each value once")
        return v

    @field_validator("exclude", "include")
    @classmethod
    def _combos(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        keys = cls.matrix_keys()
        for combo in v:
            bad = set(combo) - keys
            if bad:
                raise ValueError(
                    f"unknown parameter(s) {sorted(bad)}: use " + ", ".join(sorted(keys))
                )
        return v


class Iperf3Test(TestBase):
    """A throughput test with iperf3."""

    engine: Literal["iperf3"] = "iperf3"
    params: Iperf3Params = Field(default_factory=lambda: Iperf3Params())


#: every test kind, by engine name — adding an engine adds one line here
TEST_KINDS: dict[str, type[TestBase]] = {"iperf3": Iperf3Test}


def _engine_of(value: Any) -> str:
    engine = value.get("engine", "iperf3") if isinstance(value, dict) else value.engine
    return f"engine={engine}"


TestSpec = Annotated[
    Annotated[Iperf3Test, Tag("engine=iperf3")],
    Discriminator(
        _engine_of,
        custom_error_type="unknown_engine",
        custom_error_message="unknown engine: use one of " + ", ".join(TEST_KINDS),
    ),
]


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
