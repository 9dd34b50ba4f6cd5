"""The image families a campaign's machines boot: what the user-data and the SSH host need to
know about each (the login its cloud-init creates for the key pair, its package manager)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    """What the user-data and the SSH host need to know about an image."""

    name: str  #: al2023, debian-12, debian-13
    user: str  #: the login the image's cloud-init creates for the key pair (as on EC2)
    manager: str  #: its package manager (netfleet.hosts.packages' names)


FAMILIES = {
    "al2023": Family("al2023", "ec2-user", "dnf"),
    "debian-12": Family("debian-12", "admin", "apt-get"),
    "debian-13": Family("debian-13", "admin", "apt-get"),
}
