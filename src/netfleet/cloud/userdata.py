"""cloud-init user-data: the pinned host key, the engines, the dead man's switch, and the marker
that says cloud-init has finished.

Per image family (:mod:`netfleet.cloud.images`):

* **the switch** (``bootcmd``, every boot, before anything else): ``systemd-run`` arms a
  transient timer that powers the machine off after ``expires_after_minutes``. It talks to
  PID 1 directly, so it works that early on both families (Debian's cloud-init runs bootcmd
  before sysinit.target, when no D-Bus or logind is up yet, which ``shutdown +N`` needs). A
  second ``shutdown -P +N`` in ``runcmd`` (late boot, logind up) backs it up. With
  ``InstanceInitiatedShutdownBehavior=terminate`` the power-off terminates the instance.
* **the engines** (``runcmd``): AL2023 ``dnf install --setopt=strict=0`` (a package its
  repositories lack is skipped, not fatal to the others); Debian ``apt-get update`` then one
  ``apt-get install`` per package (a fresh Debian AMI has no package lists), waiting up to
  10 min for the dpkg lock (unattended-upgrades may hold it at first boot). Package names come
  from :func:`netfleet.hosts.packages.package_table`, for every tool of the engine registry
  (:func:`netfleet.engines.tools`). A tool still missing is named by the run's preflight.
* **the marker** (``runcmd``, last): :data:`READY_MARKER`, written once the engines are
  installed; :mod:`netfleet.cloud.ready` waits for it over SSH before the campaign starts.
"""

from __future__ import annotations

import json
import math

from netfleet.cloud.hostkeys import KeyPair
from netfleet.cloud.images import FAMILIES
from netfleet.engines import tools
from netfleet.hosts.packages import packages_for

_APT = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-o", "DPkg::Lock::Timeout=600"]
#: written by the user-data's last command (cloud-init's final stage, after the packages):
#: the instance is ready for the campaign (:mod:`netfleet.cloud.ready` checks it over SSH)
READY_MARKER = "/var/lib/netfleet/ready"


def install_commands(family: str) -> list[list[str]]:
    """argv lists (run as root by cloud-init) installing the engines on ``family``."""
    manager = FAMILIES[family].manager
    packages, _ = packages_for(list(tools()), manager)
    if manager == "apt-get":
        each = [[*_APT, "install", "-y", "--no-install-recommends", p] for p in packages]
        return [[*_APT, "update"], *each]
    return [[manager, "install", "-y", "--setopt=strict=0", *packages]]


def deadline_commands(minutes: int) -> tuple[list[list[str]], list[list[str]]]:
    """(bootcmd, runcmd) entries that power the machine off ``minutes`` after boot."""
    timer = [
        "systemd-run",
        "--unit=netfleet-deadline",
        f"--on-active={minutes}min",
        "--timer-property=AccuracySec=10s",
        "/usr/bin/systemctl",
        "poweroff",
    ]
    return [timer], [["shutdown", "-P", f"+{minutes}"]]


def render(host_key: KeyPair, shutdown_after_minutes: float, family: str = "al2023") -> str:
    """A #cloud-config document. JSON is valid YAML, so every value is quoted by json.dumps —
    nothing from a spec is pasted into a shell line unquoted."""
    minutes = max(1, math.ceil(shutdown_after_minutes))
    boot, late = deadline_commands(minutes)
    doc = {
        "ssh_deletekeys": True,
        "ssh_genkeytypes": [],
        "ssh_keys": {
            "ed25519_private": host_key.private_openssh,
            "ed25519_public": host_key.public_openssh,
        },
        "package_update": False,  # runcmd does it where the family needs it (apt)
        # the dead man's switch: with InstanceInitiatedShutdownBehavior=terminate a poweroff
        # terminates the instance even if the controller is gone
        "bootcmd": boot,
        # runcmd runs in cloud-init's final stage; the ready marker last, after the engines
        "runcmd": [
            *late,
            *install_commands(family),
            ["mkdir", "-p", READY_MARKER.rsplit("/", 1)[0]],
            ["touch", READY_MARKER],
        ],
    }
    return "#cloud-config\n" + json.dumps(doc, indent=1) + "\n"
