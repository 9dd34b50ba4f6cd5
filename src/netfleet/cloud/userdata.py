"""cloud-init user-data: the pinned host key, the engines, and the dead man's switch."""

from __future__ import annotations

import json
import math

from netfleet.cloud.hostkeys import KeyPair

PACKAGES = ("iperf3", "iperf", "sockperf")


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
    }
    return "#cloud-config\n" + json.dumps(doc, indent=1) + "\n"
