"""The campaign spec: hosts, tests, a parameter matrix, repeats, cooldown and order.

A spec is declarative YAML checked by these pydantic models (``netfleet schema`` prints the JSON
Schema). Every string that later becomes part of a command line is validated here against a
strict pattern, and commands are always argv lists: nothing from a spec ever reaches a shell.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    Discriminator,
    Field,
    Tag,
    create_model,
    field_validator,
    model_validator,
)

from netfleet.engines import ENGINES, Engine
from netfleet.engines.params import EngineParams
from netfleet.spec.cloud import AwsHostSpec, CloudBlock, expand_cloud
from netfleet.spec.common import NAME, LabelValue, LocatedError, _check_labels, _Strict
from netfleet.spec.scheduling import RetryPolicy, WatchBlock, check_budget
from netfleet.spec.ssh import SshHostSpec
from netfleet.spec.topology import Topology, check_topology


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
    chroot: str | None = Field(
        None,
        pattern=r"^/[A-Za-z0-9._/-]{0,255}$",
        description="run the engines inside this root directory (e.g. a newer Debian with "
        "iperf3 3.18: netfleet.lab.chroot.ensure_root)",
    )
    via: Literal["direct", "gateway"] = Field(
        "direct",
        description="lab hosts: 'gateway' reaches the host at its public address, through the "
        "lab's router (path MTU of the gateway)",
    )
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
        if self.via == "gateway" and not by_lab:
            raise ValueError("'via: gateway' is for lab hosts: use lab + host, or remove 'via'")
        return self


HostSpec = Annotated[
    LocalHostSpec | NetnsHostSpec | SshHostSpec | AwsHostSpec, Field(discriminator="kind")
]


ROLE_KEYS = ("client", "server")


class TestBase(_Strict):
    """One test: an engine between a client and a server, expanded over a matrix. Each engine
    has a subclass that fixes ``engine`` and the type of ``params``."""

    name: str = Field(pattern=NAME)
    engine: str
    client: str | None = Field(None, description="host name (or put 'client' in the matrix)")
    server: str | None = Field(None, description="host name (or put 'server' in the matrix)")
    topology: Topology | None = Field(
        None, description="pairs, star or mesh of hosts, instead of client and server"
    )
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


def _test_kind(name: str, engine: Engine) -> type[TestBase]:
    """The spec model of one engine's tests: ``engine`` fixed to its name, ``params`` typed by
    its params model (defaulted when every field has a default)."""
    model = engine.params_model
    required = any(f.is_required() for f in model.model_fields.values())
    params: Any = Field(...) if required else Field(default_factory=model)
    kind: type[TestBase] = create_model(
        type(engine).__name__ + "Test",
        __base__=TestBase,
        __doc__=engine.title,
        __module__=__name__,
        engine=(Literal[name], name),  # type: ignore[arg-type]
        params=(model, params),
    )
    return kind


#: every test kind, by engine name — derived from the engine registry
TEST_KINDS: dict[str, type[TestBase]] = {
    name: _test_kind(name, engine) for name, engine in ENGINES.items()
}


def _engine_of(value: Any) -> str:
    engine = value.get("engine", "iperf3") if isinstance(value, dict) else value.engine
    return f"engine={engine}"


if TYPE_CHECKING:
    TestSpec = TestBase
else:
    TestSpec = Annotated[
        Union[tuple(Annotated[kind, Tag(f"engine={name}")] for name, kind in TEST_KINDS.items())],  # noqa: UP007
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
    inventory: str | None = Field(
        None,
        description="YAML inventory file (a list of hosts) merged into hosts; relative to the spec",
    )
    cloud: CloudBlock | None = Field(
        None, description="machines to launch (AWS): each fleet becomes kind aws hosts"
    )
    hosts: dict[str, HostSpec] = Field(default_factory=dict)
    tests: list[TestSpec] = Field(min_length=1)
    repeats: int = Field(1, ge=1, le=10000)
    cooldown: float = Field(
        0, ge=0, le=86400, description="seconds a host rests between two of its runs"
    )
    order: Literal["as-written", "shuffled"] = "as-written"
    seed: int = Field(0, description="seed for order: shuffled")
    concurrency: int = Field(
        1, ge=1, le=10000, description="runs at once at most (CLI --concurrency wins)"
    )
    allow_host_overlap: bool | list[str] = Field(
        False,
        description="hosts that may take part in several runs at once (true: every host); by "
        "default a host is in one run at a time",
    )
    bandwidth_budget: str | None = Field(
        None,
        description="sum of the planned bitrates of concurrent runs stays at or under this "
        "rate, e.g. 5gbit (every run then needs a bitrate)",
    )
    retry: RetryPolicy = Field(
        default_factory=lambda: RetryPolicy(), description="what --resume runs again"
    )
    watch: WatchBlock | None = Field(
        None, description="netfleet watch: schedule and alert threshold (its flags win)"
    )

    _labels = field_validator("labels")(_check_labels)
    _budget = field_validator("bandwidth_budget")(check_budget)

    @model_validator(mode="before")
    @classmethod
    def _cloud_hosts(cls, data: Any) -> Any:
        return expand_cloud(data)

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
        for i, name in enumerate(names):
            if name in names[:i]:
                raise LocatedError(
                    f"test name {name!r} is used twice: test names must be unique, rename one",
                    ("tests", i, "name"),
                )
        if not self.hosts:
            raise ValueError("list at least one host (under 'hosts:' or in the inventory file)")
        overlap = self.allow_host_overlap
        for h in overlap if isinstance(overlap, list) else []:
            if h not in self.hosts:
                raise LocatedError(
                    f"allow_host_overlap: {h!r} is not in hosts", ("allow_host_overlap",)
                )
        for ti, t in enumerate(self.tests):
            if t.topology is not None:
                try:
                    check_topology(t.name, t.topology, t, list(self.hosts))
                except ValueError as exc:
                    raise LocatedError(str(exc), ("tests", ti, "topology")) from None
                continue
            for role in ("client", "server"):
                fixed = getattr(t, role)
                listed = t.matrix.get(role, [])
                if fixed is None and not listed:
                    raise LocatedError(
                        f"test {t.name!r} has no {role}: set '{role}:' or matrix.{role}",
                        ("tests", ti),
                    )
                for h in ([fixed] if fixed else []) + list(listed):
                    if h not in self.hosts:
                        where = ("tests", ti, role) if h == fixed else ("tests", ti, "matrix", role)
                        raise LocatedError(
                            f"test {t.name!r}: {role} {h!r} is not in hosts "
                            f"(known: {', '.join(sorted(self.hosts))}): add it under hosts "
                            "or fix the name",
                            where,
                        )
        return self
