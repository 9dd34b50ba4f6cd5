"""What a lab owns, on disk: one JSON file per lab, written atomically.

``up`` records every namespace in the file *before* creating it, so ``down`` can always clean up,
even after a crash halfway through ``up``; it deletes only what the file names. The directory is
``/run/netfleet/labs`` unless ``NETFLEET_STATE_DIR`` or a ``state_dir`` argument says otherwise.
"""

from __future__ import annotations

import contextlib
import os
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from netfleet.durable import atomic_write, write_temp
from netfleet.errors import InputError, LabError
from netfleet.lab.models import LAB_NAME, LabelValue, Link, Scale, Shaper

STATE_VERSION = 1
DEFAULT_STATE_DIR = Path("/run/netfleet/labs")
STATE_DIR_ENV = "NETFLEET_STATE_DIR"
BRIDGE = "br0"
INTERFACE = "eth0"


def switch_namespace(lab: str) -> str:
    return f"nf-{lab}-sw"


def host_namespace(lab: str, host: str) -> str:
    return f"nf-{lab}-{host}"


def port_name(host: str) -> str:
    """The switch-side veth toward ``host`` (at most 13 characters: interface names stop at 15)."""
    return f"to-{host}"


class Process(BaseModel):
    """A process the lab started and owns: its PID and start time (``/proc/PID/stat`` field 22,
    clock ticks since boot), so a reused PID is never taken for it."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    start_ticks: int


class LabHost(BaseModel):
    """A host of a running lab: where it lives and how it is shaped."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    lab: str
    name: str
    namespace: str
    interface: str = INTERFACE
    port: str = Field(description="the switch-side veth toward this host")
    address: str = Field(description="IPv4 address, without prefix")
    prefix: int
    mtu: int
    labels: dict[str, LabelValue] = Field(default_factory=dict)
    out: Shaper | None = None
    in_: Shaper | None = Field(default=None, alias="in")
    public_address: str | None = Field(
        default=None, description="its address behind the lab's gateway, if the lab has one"
    )
    flow_cap: float | None = Field(default=None, description="per-flow cap in bits/s, if any")
    link: Link | None = Field(default=None, description="delay/jitter/loss per direction, if any")
    delayline: Process | None = Field(
        default=None, description="the delay line process on this host's link, once started"
    )

    @field_validator("address", mode="before")
    @classmethod
    def _address(cls, value: object) -> str:
        return str(IPv4Address(str(value)))

    @property
    def cidr(self) -> str:
        return f"{self.address}/{self.prefix}"


class LabState(BaseModel):
    """The state file of one lab."""

    model_config = ConfigDict(extra="forbid")

    netfleet_lab_state: int = STATE_VERSION
    name: str
    subnet: str
    switch: str
    bridge: str = BRIDGE
    created_at: str
    source: str | None = Field(default=None, description="the lab file it came from, if any")
    complete: bool = Field(default=False, description="true once `up` finished")
    namespaces: list[str] = Field(default_factory=list, description="in creation order")
    inodes: dict[str, str | int] = Field(
        default_factory=dict,
        description="namespace -> identity, INODE:CTIME_NS of its nsfs inode (an int: the inode"
        " number alone, as states written before 0.2 hold it)",
    )
    hosts: dict[str, LabHost] = Field(default_factory=dict)
    gateway: dict[str, Any] | None = Field(
        default=None, description="router namespace, addresses and MTU, if the lab has one"
    )
    scale: Scale | None = Field(
        default=None,
        description="lab rate/time ÷ the cloud's, from the lab file; also each host's "
        "lab_scale / lab_time_scale labels, so every result says so",
    )


def state_dir(override: str | Path | None = None) -> Path:
    if override is not None:
        return Path(override)
    env = os.environ.get(STATE_DIR_ENV)
    return Path(env) if env else DEFAULT_STATE_DIR


def state_path(name: str, directory: str | Path | None = None) -> Path:
    if not LAB_NAME.match(name):
        raise InputError(
            f"{name!r} is not a lab name",
            hint="lab names are 1-12 lower-case letters, digits or '-', e.g. demo",
        )
    return state_dir(directory) / f"{name}.json"


def lab_names(directory: str | Path | None = None) -> list[str]:
    d = state_dir(directory)
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.json") if LAB_NAME.match(p.stem))


def read_state(name: str, directory: str | Path | None = None) -> LabState | None:
    """The lab's state, or None when it has no state file (it is not up)."""
    path = state_path(name, directory)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LabError(f"cannot read the lab state file {path}: {exc}") from exc
    try:
        state = LabState.model_validate_json(text)
    except ValidationError as exc:
        raise LabError(
            f"the lab state file {path} is damaged or not netfleet's ({exc.error_count()} errors)",
            hint=f"read it; `ip netns delete` the namespaces it lists, then remove {path}",
        ) from exc
    if state.netfleet_lab_state != STATE_VERSION:
        raise LabError(
            f"{path} has state version {state.netfleet_lab_state}, not {STATE_VERSION}",
            hint="use the netfleet version that brought the lab up to take it down",
        )
    return state


def _write_temp(state: LabState, directory: Path) -> Path:
    data = state.model_dump_json(by_alias=True, indent=2).encode()
    return write_temp(directory, data, prefix=f".{state.name}-", suffix=".tmp")


def claim_state(state: LabState, directory: str | Path | None = None) -> Path:
    """Create the state file, failing if the lab already has one (atomic: link, not replace)."""
    path = state_path(state.name, directory)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _write_temp(state, path.parent)
    except OSError as exc:
        raise LabError(
            f"cannot write the lab state in {path.parent}: {exc}",
            hint=f"choose a writable directory with {STATE_DIR_ENV}=DIR",
        ) from exc
    try:
        os.link(tmp, path)
    except FileExistsError as exc:
        raise LabError(
            f"lab {state.name!r} is already up (state file {path})",
            hint=f"take it down first: netfleet lab down {state.name}",
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_state(state: LabState, directory: str | Path | None = None) -> Path:
    """Replace the state file atomically (temp file + rename)."""
    path = state_path(state.name, directory)
    data = state.model_dump_json(by_alias=True, indent=2).encode()
    return atomic_write(path, data, prefix=f".{state.name}-", suffix=".tmp")


def remove_state(name: str, directory: str | Path | None = None) -> None:
    with contextlib.suppress(FileNotFoundError):
        state_path(name, directory).unlink()
