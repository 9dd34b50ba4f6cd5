"""The lab file: an emulated cloud described in YAML and checked by pydantic.

Load one with :func:`netfleet.lab.load_lab`; every problem comes back as a
:class:`~netfleet.errors.SpecError` naming the file, the field, the line and the fix.
Rates are bits/s and sizes bytes once parsed (``netfleet.units``). The reference is docs/lab.md.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network, ip_network
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from netfleet.spec.common import _check_labels
from netfleet.units import fmt_rate, parse_rate, parse_size

#: Addresses reserved for benchmarking (RFC 2544): the only ones a lab may use.
BENCHMARK_RANGE = IPv4Network("198.18.0.0/15")
LAB_NAME = re.compile(r"^[a-z][a-z0-9-]{0,11}$")
HOST_NAME = re.compile(r"^[a-z][a-z0-9-]{0,9}$")
#: Host names that would collide with the lab's own namespaces (``nf-<lab>-sw`` is the switch).
RESERVED_HOSTS = frozenset({"sw"})
#: tbf keeps its bucket as a 32-bit count of 64 ns ticks: longer than this it silently wraps.
TBF_MAX_BUCKET_SECONDS = 270.0
TBF_MAX_BYTES = 2**32 - 1
#: Credit shapers let whole GSO super-packets through at peak rate (FIELD-NOTES).
TBF_PEAK_MTU = 65536
#: A steady shaper's burst: 20 ms at rate, or room for a GSO super-packet if that is more. The
#: tokens of a host that stalls (its sender, or the kernel's timers, late on a busy machine) wait
#: that long before they overflow and are lost (docs/lab.md "Shaping").
STEADY_MIN_BURST = 131072
STEADY_BURST_SECONDS = 0.020
MIN_RATE = 64e3
MAX_RATE = 100e9
#: A delay line holds at most this long a packet (its ring is sized from the delay).
MAX_DELAY = 2.0
DURATION_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_NUMBER = r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_DURATION = re.compile(rf"^\s*{_NUMBER}\s*(s|ms|us|µs|ns)\s*$")
_PERCENT = re.compile(rf"^\s*{_NUMBER}\s*%\s*$")

LabelValue = str | int | float | bool
#: In YAML a rate or size is a number or a string with a unit; once validated, a float.
Rate = Annotated[
    float,
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "examples": ["300mbit"]}]}),
]
Size = Annotated[
    float,
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "examples": ["6750mbit"]}]}),
]


def check_lab_name(name: str) -> str:
    if not LAB_NAME.match(name):
        raise ValueError(
            f"{name!r} is not a lab name: use 1-12 characters, lower-case letters, digits and '-', "
            "starting with a letter (it becomes part of namespace names), e.g. demo"
        )
    return name


def optional_rate(value: Any) -> Any:
    """A rate in bits/s within 64kbit..100gbit, or None (a cap that is absent)."""
    if value is None or isinstance(value, bool):
        return value
    rate = parse_rate(value)
    if not MIN_RATE <= rate <= MAX_RATE:
        raise ValueError(f"{fmt_rate(rate)} is out of range: use 64kbit..100gbit")
    return rate


class Shaper(BaseModel):
    """A token bucket on one direction of a host's link.

    Steady (``rate`` only): the link never exceeds ``rate``. Credit (``rate`` + ``peak`` +
    ``bucket``): the host sends at ``peak`` while its bucket of credit lasts, then at ``rate``
    (the baseline), like AWS "up to" instances; a full bucket lasts ``bucket / (peak - rate)``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rate: Rate = Field(description="baseline rate in bits/s (YAML: 300mbit, 1.5gbit)")
    peak: Rate | None = Field(default=None, description="peak rate in bits/s while credit lasts")
    bucket: Size | None = Field(default=None, description="credit in bytes (YAML: 6750mbit, 800mb)")
    queue: Size | None = Field(
        default=None,
        description="bytes the tbf may hold waiting (its limit; YAML: 125kb). Default: 100 ms "
        "at rate plus the burst. A full queue delays every packet by queue / rate",
    )

    @field_validator("rate", "peak", mode="before")
    @classmethod
    def _rate(cls, value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        rate = parse_rate(value)
        if not MIN_RATE <= rate <= MAX_RATE:
            raise ValueError(
                f"{fmt_rate(rate)} is out of range: write a rate between 64kbit and 100gbit"
            )
        return rate

    @field_validator("bucket", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        return parse_size(value)

    @field_validator("queue", mode="before")
    @classmethod
    def _queue(cls, value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        size = parse_size(value)
        if not TBF_PEAK_MTU <= size <= TBF_MAX_BYTES:
            raise ValueError(
                f"queue {size:.0f} bytes is out of range: use 64kb..4gb (it must hold a 64 KiB "
                "GSO super-packet, or tbf drops every one)"
            )
        return size

    @model_validator(mode="after")
    def _credit(self) -> Shaper:
        if (self.peak is None) != (self.bucket is None):
            raise ValueError(
                "a credit shaper needs both 'peak' and 'bucket' (a steady one neither): "
                "add the missing one or remove the other"
            )
        if self.peak is not None and self.bucket is not None:
            if self.peak <= self.rate:
                raise ValueError(
                    f"peak ({fmt_rate(self.peak)}) must be above rate ({fmt_rate(self.rate)}): "
                    "raise 'peak', or drop 'peak' and 'bucket' for a steady link"
                )
            if self.bucket < TBF_PEAK_MTU:
                raise ValueError("bucket must hold at least 64 KiB (65536 bytes): make it bigger")
            if self.bucket > TBF_MAX_BYTES:
                raise ValueError(
                    f"bucket {self.bucket:.0f} bytes exceeds tbf's 32-bit limit (4.29 GB, "
                    "34359mbit): make it smaller or scale time down"
                )
            if self.bucket * 8 / self.rate > TBF_MAX_BUCKET_SECONDS:
                raise ValueError(
                    f"bucket / rate = {self.bucket * 8 / self.rate:.0f} s exceeds tbf's limit of "
                    f"{TBF_MAX_BUCKET_SECONDS:.0f} s (it would silently wrap): shrink the bucket "
                    "or raise the rate (scale time down)"
                )
        return self

    @property
    def kind(self) -> str:
        return "steady" if self.peak is None else "credit"

    @property
    def burst_seconds(self) -> float | None:
        """How long a full bucket lasts at peak rate (credit shapers only)."""
        if self.peak is None or self.bucket is None:
            return None
        return self.bucket * 8 / (self.peak - self.rate)

    def describe(self) -> str:
        if self.peak is None or self.bucket is None:
            return f"steady {fmt_rate(self.rate)}"
        return (
            f"credit {fmt_rate(self.rate)} baseline, {fmt_rate(self.peak)} peak, "
            f"bucket {self.bucket * 8 / 1e6:g} Mbit ({self.burst_seconds:.1f} s at peak)"
        )


def parse_duration(value: Any) -> float:
    """``30ms``, ``650us``/``650µs``, ``1.5s``, ``200ns`` -> seconds. A bare number is refused:
    a delay without a unit is a guess (0 alone is accepted)."""
    if isinstance(value, bool):
        raise ValueError("write a duration with its unit, e.g. 30ms or 650us")
    if isinstance(value, int | float):
        if value == 0:
            return 0.0
        raise ValueError(f"{value!r} has no unit: write e.g. {value}ms or {value}us")
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a duration: write e.g. 30ms, 650us or 1.5s")
    return float(m.group(1)) * DURATION_UNITS[m.group(2)]


def parse_percent(value: Any) -> float:
    """``0.5%`` -> 0.005. Bare numbers are refused (is 1 one percent or everything?)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value == 0:
        return 0.0
    m = _PERCENT.match(str(value)) if isinstance(value, str) else None
    if not m:
        raise ValueError(f"{value!r} is not a percentage: write e.g. 0.1% (0% for none)")
    fraction = float(m.group(1)) / 100
    if fraction > 1:
        raise ValueError(f"{value!r} is more than 100%: write 0%..100%")
    return fraction


Duration = Annotated[
    float,
    WithJsonSchema({"anyOf": [{"type": "string", "examples": ["30ms", "650us"]}, {"const": 0}]}),
]
Percent = Annotated[
    float,
    WithJsonSchema({"anyOf": [{"type": "string", "examples": ["0.1%"]}, {"const": 0}]}),
]


class Impairment(BaseModel):
    """What one direction of a link does to every packet: hold it ``delay`` (± ``jitter``,
    uniform, never reordering) and drop it with probability ``loss``. Emulated by the lab's
    delay line (native/delayline), as this kernel has no netem. Values are seconds and a
    fraction once parsed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    delay: Duration = Field(
        default=0.0, description="one-way delay added to every packet (YAML: 30ms, 650us)"
    )
    jitter: Duration = Field(
        default=0.0,
        description="each packet's delay is uniform in delay ± jitter (at most delay); a packet "
        "never leaves before the one ahead of it",
    )
    loss: Percent = Field(default=0.0, description="share of packets dropped at random (0.1%)")

    @field_validator("delay", "jitter", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float:
        seconds = parse_duration(value)
        if seconds > MAX_DELAY:
            raise ValueError(f"{value!r} is too long: a delay line holds packets at most 2s")
        return seconds

    @field_validator("loss", mode="before")
    @classmethod
    def _loss(cls, value: Any) -> float:
        return parse_percent(value)

    # In JSON (the lab state) as the YAML spells them, so a state file reads back.
    @field_serializer("delay", "jitter", when_used="json")
    def _seconds(self, value: float) -> str:
        return f"{value!r}s"

    @field_serializer("loss", when_used="json")
    def _percent(self, value: float) -> str:
        return f"{value * 100!r}%"

    @model_validator(mode="after")
    def _jitter(self) -> Impairment:
        if self.jitter > self.delay:
            raise ValueError(
                f"jitter ({self.jitter * 1e3:g} ms) exceeds delay ({self.delay * 1e3:g} ms): "
                "a packet cannot leave before it arrived; lower jitter or raise delay"
            )
        return self

    def describe(self) -> str:
        parts = [fmt_duration(self.delay)]
        if self.jitter:
            parts[0] += f" ± {fmt_duration(self.jitter)}"
        if self.loss:
            parts.append(f"{self.loss * 100:g}% loss")
        return ", ".join(parts)


def fmt_duration(seconds: float) -> str:
    if seconds >= 1e-3 or seconds == 0:
        return f"{seconds * 1e3:g} ms"
    return f"{seconds * 1e6:g} µs"


class Link(BaseModel):
    """A host's link with a delay line: ``out`` acts on what the host sends, ``in`` on what it
    receives. The round trip between two hosts gains both hosts' out + in delays."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True,
                              validate_by_alias=True)  # fmt: skip

    out: Impairment = Field(default_factory=Impairment, description="on what the host sends")
    in_: Impairment = Field(
        default_factory=Impairment, alias="in", description="on what the host receives"
    )

    def describe(self) -> str:
        return f"delay line out {self.out.describe()}, in {self.in_.describe()}"


class Scale(BaseModel):
    """How the lab's numbers relate to the cloud it imitates (documentation only)."""

    model_config = ConfigDict(extra="forbid")

    rate: float = Field(default=1.0, gt=0, description="lab rate / cloud rate")
    time: float = Field(default=1.0, gt=0, description="lab duration / cloud duration")
    basis: Literal["wire", "goodput"] = Field(
        default="wire",
        description="what the cloud figures the shaper rates were built from are: wire rates "
        "(what a shaper limits), or goodput (a seed's iperf3 figures used as shaper rates: the "
        "lab's goodput lands under the seed's by the TCP/IP overhead, 4.4 % at MTU 1500; "
        "outputs comparing the lab's figures with the cloud's say so)",
    )
    note: str | None = None


class HostSpec(BaseModel):
    """One emulated machine: its own namespace, one interface, optional shapers."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    labels: dict[str, LabelValue] = Field(default_factory=dict)
    mtu: int | None = Field(default=None, description="link MTU, overriding the lab's")

    _labels = field_validator("labels")(_check_labels)  # no secrets, sane keys (as in specs)
    address: IPv4Address | None = Field(
        default=None, description="default: next free in the subnet"
    )
    out: Shaper | None = Field(default=None, description="shaper on what the host sends")
    in_: Shaper | None = Field(
        default=None, alias="in", description="shaper on what the host receives"
    )
    flow_cap: Rate | None = Field(
        default=None,
        description="per-flow cap in bits/s on what it sends and receives (htb per flow)",
    )
    link: Link | None = Field(
        default=None,
        description="delay, jitter and loss per direction (a userspace delay line on the link)",
    )

    _flow_cap = field_validator("flow_cap", mode="before")(optional_rate)

    @model_validator(mode="after")
    def _one_shaping(self) -> HostSpec:
        if self.flow_cap is not None and (self.out is not None or self.in_ is not None):
            raise ValueError(
                "flow_cap replaces the host's root qdiscs: use either flow_cap or out/in"
            )
        return self

    @field_validator("mtu")
    @classmethod
    def _mtu(cls, value: int | None) -> int | None:
        return None if value is None else check_mtu(value)

    @field_validator("address", mode="before")
    @classmethod
    def _address(cls, value: Any) -> Any:
        if isinstance(value, str) and "/" in value:
            raise ValueError(
                "write the address without a prefix, e.g. 198.18.0.10: the prefix is the subnet's"
            )
        return value


def check_mtu(value: int) -> int:
    if not 576 <= value <= 9216:
        raise ValueError(f"MTU {value} is out of range: use 576..9216 (1500, or 9001 like AWS)")
    return value


def check_subnet(value: Any, example: str) -> IPv4Network:
    """A network inside 198.18.0.0/15 — the only addresses a lab ever uses."""
    try:
        net = ip_network(str(value), strict=True)
    except ValueError as exc:
        raise ValueError(
            f"{value!r} is not a network address ({exc}): write e.g. {example}"
        ) from exc
    if not isinstance(net, IPv4Network) or not net.subnet_of(BENCHMARK_RANGE):
        raise ValueError(
            f"{net} is outside 198.18.0.0/15, the range reserved for benchmarking: "
            f"use e.g. {example} (a lab never uses other addresses)"
        )
    return net


class Gateway(BaseModel):
    """A router between the hosts' public addresses (seed 003: MTU 1500 through a gateway)."""

    model_config = ConfigDict(extra="forbid")

    mtu: int = Field(default=1500, description="MTU of the routed path")
    subnet: IPv4Network = Field(
        default=IPv4Network("198.18.100.0/24"), description="public addresses, in 198.18.0.0/15"
    )
    rate: Rate | None = Field(
        default=None,
        description="what the gateway forwards at most, in bits/s, both directions together "
        "(seed 003: 5 Gbit/s through an AWS gateway); absent: uncapped",
    )

    _rate = field_validator("rate", mode="before")(optional_rate)

    @field_validator("mtu")
    @classmethod
    def _mtu(cls, value: int) -> int:
        return check_mtu(value)

    @field_validator("subnet", mode="before")
    @classmethod
    def _subnet(cls, value: Any) -> IPv4Network:
        return check_subnet(value, example="198.18.100.0/24")


class LabSpec(BaseModel):
    """A whole lab: a switch and the hosts plugged into it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="short lab name; namespaces are nf-<name>-<host>")
    description: str | None = None
    subnet: IPv4Network = Field(
        default=IPv4Network("198.18.0.0/24"), description="inside 198.18.0.0/15"
    )
    mtu: int = Field(default=1500, description="default link MTU")
    scale: Scale | None = None
    gateway: Gateway | None = Field(
        default=None, description="a router namespace; hosts also get public addresses"
    )
    hosts: dict[str, HostSpec] = Field(description="host name -> host")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_lab_name(value)

    @field_validator("mtu")
    @classmethod
    def _mtu(cls, value: int) -> int:
        return check_mtu(value)

    @field_validator("subnet", mode="before")
    @classmethod
    def _subnet(cls, value: Any) -> IPv4Network:
        net = check_subnet(value, example="198.18.0.0/24")
        if net.prefixlen > 29:
            raise ValueError(f"{net} is too small: use a /29 or bigger, e.g. 198.18.0.0/24")
        return net

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, hosts: dict[str, HostSpec]) -> dict[str, HostSpec]:
        if not hosts:
            raise ValueError("a lab needs at least one host: add one under 'hosts:'")
        for name in hosts:
            if not HOST_NAME.match(name):
                raise ValueError(
                    f"{name!r} is not a host name: use 1-10 characters, lower-case letters, "
                    "digits and '-', starting with a letter"
                )
            if name in RESERVED_HOSTS or name == "gw":
                raise ValueError(f"{name!r} is reserved for the lab's switch: rename the host")
        return hosts

    @model_validator(mode="after")
    def _addresses(self) -> LabSpec:
        problems: list[InitErrorDetails] = []

        def problem(host: str, message: str, value: object) -> None:
            problems.append(
                InitErrorDetails(
                    type=PydanticCustomError("lab_address", message),
                    loc=("hosts", host, "address"),
                    input=value,
                )
            )

        usable = self.subnet.num_addresses - 2
        if len(self.hosts) > usable:
            raise ValueError(
                f"{len(self.hosts)} hosts do not fit in {self.subnet} ({usable} addresses): "
                "use a bigger subnet, e.g. a /24"
            )
        seen: dict[IPv4Address, str] = {}
        for name, host in self.hosts.items():
            addr = host.address
            if addr is None:
                continue
            if addr not in self.subnet:
                problem(name, f"{addr} is outside the subnet {self.subnet}: pick one inside", addr)
            elif addr in (self.subnet.network_address, self.subnet.broadcast_address):
                problem(name, f"{addr} is the subnet's network or broadcast address", addr)
            elif addr in seen:
                problem(name, f"{addr} is already {seen[addr]}'s address: pick another", addr)
            else:
                seen[addr] = name
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        if self.gateway is not None:
            if self.gateway.subnet.overlaps(self.subnet):
                raise ValueError(
                    f"gateway subnet {self.gateway.subnet} overlaps the lab subnet {self.subnet}: "
                    "use another, e.g. 198.18.100.0/24"
                )
            if self.gateway_address() in seen:
                raise ValueError(
                    f"{self.gateway_address()} is the gateway's address: give the host another"
                )
            if len(self.hosts) > self.gateway.subnet.num_addresses - 2:
                raise ValueError("the gateway subnet is too small for every host: use a /24")
        return self

    def gateway_address(self) -> IPv4Address:
        """The router's address on the lab subnet: the last usable one."""
        return self.subnet.broadcast_address - 1

    def public_addresses(self) -> dict[str, IPv4Address]:
        """Each host's address behind the gateway, from .1 up in file order."""
        if self.gateway is None:
            return {}
        return dict(zip(self.hosts, self.gateway.subnet.hosts(), strict=False))

    def addresses(self) -> dict[str, IPv4Address]:
        """Every host's address: its own, or the next free one from .1 up, in file order."""
        taken = {h.address for h in self.hosts.values() if h.address is not None}
        free = (a for a in self.subnet.hosts() if a not in taken)
        return {name: h.address or next(free) for name, h in self.hosts.items()}


def lab_schema() -> dict[str, Any]:
    """JSON Schema of a lab file (field names as written in YAML, e.g. ``in``)."""
    return LabSpec.model_json_schema(by_alias=True)
