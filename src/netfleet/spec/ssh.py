"""``kind: ssh`` — a machine reached over SSH (any cloud, any data centre).

Host keys are always verified against known_hosts; netfleet has no switch to turn that off.
Secrets never appear in a spec: ``key`` is the *path* of a private key (or use ssh-agent).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator

from netfleet.keymaterial import looks_like_key_material
from netfleet.spec.common import LabelValue, _check_labels, _Strict, resolve_path

#: a DNS name (RFC 1123 labels); never starts with '-', so it cannot pass for an option
HOSTNAME = (
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)
USER = r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$"


def check_address(value: str) -> str:
    """An IP address or a DNS name; anything else (spaces, a leading '-') is refused."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        if not re.match(HOSTNAME, value):
            raise ValueError(
                f"{value!r} is neither an IP address nor a host name (letters, digits, '-', '.')"
            ) from None
    return value


class SshEndpoint(_Strict):
    """Where and as whom to log in."""

    port: int = Field(22, ge=1, le=65535, description="SSH port")
    user: str | None = Field(
        None, pattern=USER, description="login user (default: your local user name)"
    )
    key: str | None = Field(
        None,
        description="path of the private key (relative to this file; default: ssh-agent and "
        "~/.ssh/id_*). Never the key itself.",
    )
    known_hosts: str | None = Field(
        None,
        description="known_hosts file that must hold the host key (default ~/.ssh/known_hosts)",
    )

    _paths = field_validator("key", "known_hosts")(resolve_path)

    @field_validator("key", "known_hosts", mode="before")
    @classmethod
    def _no_key_material(cls, value: object) -> object:
        if isinstance(value, str) and looks_like_key_material(value):
            raise ValueError(
                "this looks like key material: give the path of the key file, never the key"
            )
        return value


class SshJump(SshEndpoint):
    """A jump host (bastion): SSH to the target is tunnelled through it (like ``ssh -J``)."""

    address: str = Field(description="the jump host's address or name")

    _address = field_validator("address")(check_address)


class SshHostSpec(SshEndpoint):
    """A machine reached over SSH."""

    kind: Literal["ssh"]
    address: str = Field(
        description="the address peers reach it on (test traffic); SSH connects here too unless "
        "ssh_address is set"
    )
    ssh_address: str | None = Field(
        None, description="connect SSH here instead (e.g. a public IP while tests use `address`)"
    )
    jump: SshJump | None = Field(None, description="reach it through this jump host")
    sudo: bool = Field(
        False,
        description="run commands that need root (installing tools with --install) through "
        "'sudo -n' (passwordless sudo); engines always run as the login user",
    )
    connect_timeout: float = Field(
        15, gt=0, le=300, description="seconds to connect and log in before giving up"
    )
    labels: dict[str, LabelValue] = Field(default_factory=dict)

    _labels = field_validator("labels")(_check_labels)
    _address = field_validator("address")(check_address)

    @field_validator("ssh_address")
    @classmethod
    def _ssh_address(cls, value: str | None) -> str | None:
        return None if value is None else check_address(value)
