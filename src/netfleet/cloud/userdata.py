"""cloud-init user-data: the pinned host key, the engines, the dead man's switch, and the marker
that says cloud-init has finished."""

from __future__ import annotations

import json
import math

from netfleet.cloud.hostkeys import KeyPair

PACKAGES = ("iperf3", "iperf", "sockperf")
#: written by the user-data's last command (cloud-init's final stage, after the packages):
#: the instance is ready for the campaign (:mod:`netfleet.cloud.ready` checks it over SSH)
READY_MARKER = "/var/lib/netfleet/ready"


def render(host_key: KeyPair, shutdown_after_minutes: float) -> str:
    """A #cloud-config document. JSON is valid YAML, so every value is quoted by json.dumps —
    nothing from a spec is pasted into a shell line unquoted."""
    minutes = max(1, math.ceil(shutdown_after_minutes))
    doc = {
        "ssh_deletekeys": True,
        "ssh_genkeytypes": [],
        "ssh_keys": {
            "ed25519_private": host_key.private_openssh,
            "ed25519_public": host_key.public_openssh,
        },
        "package_update": False,
        "packages": list(PACKAGES),
        # the dead man's switch: with InstanceInitiatedShutdownBehavior=terminate a poweroff
        # terminates the instance even if the controller is gone
        "bootcmd": [["shutdown", "-P", f"+{minutes}"]],
        # runcmd runs in cloud-init's final stage, after the packages module
        "runcmd": [
            ["mkdir", "-p", READY_MARKER.rsplit("/", 1)[0]],
            ["touch", READY_MARKER],
        ],
    }
    return "#cloud-config\n" + json.dumps(doc, indent=1) + "\n"
