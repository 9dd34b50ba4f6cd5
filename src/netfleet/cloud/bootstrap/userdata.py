"""cloud-init user-data: the pinned host key, the engines, the dead man's switch, and the marker
that says cloud-init has finished.

Per image family (:mod:`netfleet.cloud.bootstrap.families`):

* **the switch** (``bootcmd``, every boot, before anything else): ``systemd-run`` arms a
  transient timer that powers the machine off after ``expires_after_minutes``. It talks to
  PID 1 directly, so it works that early on both families (Debian's cloud-init runs bootcmd
  before sysinit.target, when no D-Bus or logind is up yet, which ``shutdown +N`` needs). A
  second ``shutdown -P +N`` in ``runcmd`` (late boot, logind up) backs it up. With
  ``InstanceInitiatedShutdownBehavior=terminate`` the power-off terminates the instance.
* **the engines** (``runcmd``): the base tools (ip, ss, tc, ethtool: AL2023 lacks
  ``iproute-tc``) and the tools the host's runs use (``netfleet run``: ``HostRequest.tools``;
  every engine's when not known, ``cloud up``) that the image's own repositories provide
  (:data:`IMAGE_LACKS`: AL2023 has no iperf 2 and no sockperf package), AL2023 in one
  ``dnf install``; Debian ``apt-get update`` then one ``apt-get install`` per package (a fresh
  Debian AMI has no package lists), waiting up to 10 min for the dpkg lock (unattended-upgrades
  may hold it at first boot). Package names come from
  :func:`netfleet.hosts.packages.package_table`, for every tool of the engine registry
  (:func:`netfleet.engines.tools`).
  A campaign that needs a tool its image lacks is refused before launch (:func:`check_images`).
* **the marker** (``runcmd``, last): :data:`READY_MARKER`. ``runcmd`` runs under ``set -e``
  (after the switch's backup line), each command through a ``netfleet_step`` shell function
  that remembers it: a failed command stops the script, the ready marker is never written,
  and an ``EXIT`` trap writes the failing command and its exit status to
  :data:`FAILED_MARKER`, which :mod:`netfleet.cloud.bootstrap.ready` reads and reports at
  once (instead of waiting out its timeout, billed).

cloud-init writes ``runcmd`` into one ``sh`` script: a list entry becomes a quoted command, a
string entry a line as it is — ``set -e`` is the only string entry.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from netfleet.cloud.bootstrap.families import FAMILIES
from netfleet.cloud.bootstrap.hostkeys import KeyPair
from netfleet.engines import ENGINES, tools
from netfleet.errors import InputError
from netfleet.hosts.packages import packages_for
from netfleet.runner.tools import BASE_TOOLS

#: base tools installed in /usr/sbin (iproute2's tc, ethtool)
SBIN_TOOLS = ("tc", "ethtool")
#: tools an image family's own repositories have no package for (AL2023's repositories carry
#: iperf3 but neither iperf 2 nor sockperf)
IMAGE_LACKS: dict[str, frozenset[str]] = {"al2023": frozenset({"iperf", "sockperf"})}
_APT = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-q", "-o", "DPkg::Lock::Timeout=600"]
#: written by the user-data's last command (cloud-init's final stage, after the packages):
#: the instance is ready for the campaign (:mod:`netfleet.cloud.bootstrap.ready` checks it over SSH)
READY_MARKER = "/var/lib/netfleet/ready"
#: written when a user-data command failed: that command and its exit status
FAILED_MARKER = "/var/lib/netfleet/failed"
#: runcmd's string lines (cloud-init pastes them as they are): a function that runs a command
#: remembering it, and the trap that writes the failing one to FAILED_MARKER
_STEP_LINES = [
    'netfleet_step() { step="$*"; "$@"; }',
    'trap \'rc=$?; if [ "$rc" -ne 0 ]; then mkdir -p /var/lib/netfleet; '
    'printf "%s (exit %s)\\n" "$step" "$rc" > ' + FAILED_MARKER + "; fi' EXIT",
]


def installable(family: str, wanted: Iterable[str] | None = None) -> list[str]:
    """The tools of ``wanted`` (default: every engine's, :func:`netfleet.engines.tools`) that
    image ``family``'s repositories provide."""
    lacks = IMAGE_LACKS.get(family, frozenset())
    return [t for t in (tools() if wanted is None else wanted) if t not in lacks]


def install_commands(family: str, tools: Iterable[str] | None = None) -> list[list[str]]:
    """argv lists (run as root by cloud-init) installing the base tools and ``tools`` (None:
    every engine's) on ``family``: only packages its repositories have, so any failure is a
    real one (``set -e`` stops there)."""
    manager = FAMILIES[family].manager
    wanted = installable(family, None if tools is None else sorted(set(tools)))
    packages, _ = packages_for([*BASE_TOOLS, *wanted], manager)
    if manager == "apt-get":
        each = [[*_APT, "install", "-y", "--no-install-recommends", p] for p in packages]
        return [[*_APT, "update"], *each]
    return [[manager, "install", "-y", *packages]]


def path_links() -> list[list[str]]:
    """:data:`SBIN_TOOLS` linked into /usr/local/bin: on Debian a non-root user's command over
    SSH gets sshd's PATH (/usr/local/bin:/usr/bin:/bin:/usr/games), without /usr/sbin — the
    run's preflight would call tc and ethtool missing (found booting the user-data)."""
    return [["ln", "-sf", f"/usr/sbin/{t}", f"/usr/local/bin/{t}"] for t in SBIN_TOOLS]


def _provides(family: str, tool: str) -> bool:
    """Whether image ``family``'s repositories have a package for ``tool``."""
    return not packages_for([tool], FAMILIES[family].manager)[1] and bool(
        installable(family, [tool])
    )


def check_images(requests: Iterable[Any]) -> None:
    """Before launch: every ``backing: ssh`` instance's image provides the tools its runs need
    (``HostRequest.tools``); else InputError naming host, image, tool and engine."""
    problems = []
    for req in requests:
        cloud = getattr(req.spec, "cloud", None)
        if cloud is None or getattr(req.spec, "fargate", None) or cloud.backing != "ssh":
            continue
        family = cloud.image_family
        lacking = [t for t in getattr(req, "tools", ()) if not _provides(family, t)]
        for tool in lacking:
            # the engines that run it: declared, or chosen per run (latency: tool sockperf)
            engines = sorted(n for n, e in ENGINES.items() if tool in (*e.tools, *e.packages))
            image = f"{cloud.ami} (taken as {family})" if cloud.ami else family
            problems.append(
                f"host {req.name}: image {image} has no package for {tool} "
                f"(engine {', '.join(engines) or '?'})"
            )
    if problems:
        raise InputError(
            "the campaign needs engines its instances' image cannot install:\n  "
            + "\n  ".join(problems),
            hint="use image: debian-12 (its repositories carry iperf and sockperf) on those "
            "fleets, or drop the engines that need them",
        )


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


def render(
    host_key: KeyPair,
    shutdown_after_minutes: float,
    family: str = "al2023",
    tools: Iterable[str] | None = None,
) -> str:
    """A #cloud-config document installing ``tools`` (what the host's runs use; None: every
    engine's). JSON is valid YAML, so every value is quoted by json.dumps — nothing from a
    spec is pasted into a shell line unquoted (the string lines are netfleet's own)."""
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
            *late,  # the switch's backup may fail (no logind yet): not under set -e
            *_STEP_LINES,
            "set -e",  # a failed command stops here: no ready marker, the failed one instead
            *[
                ["netfleet_step", *argv]
                for argv in [
                    *install_commands(family, tools),
                    *path_links(),
                    ["mkdir", "-p", READY_MARKER.rsplit("/", 1)[0]],
                    ["touch", READY_MARKER],
                ]
            ],
        ],
    }
    return "#cloud-config\n" + json.dumps(doc, indent=1) + "\n"
