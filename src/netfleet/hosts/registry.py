"""Turn a host spec into a Host. Adding a kind = one module + one entry here."""

from __future__ import annotations

from pathlib import Path

from netfleet.hosts.base import Host
from netfleet.hosts.local import LocalHost
from netfleet.hosts.netns import NetnsHost
from netfleet.hosts.ssh import SshHost
from netfleet.spec.models import LocalHostSpec, NetnsHostSpec, SshHostSpec


def build_host(
    name: str, spec: LocalHostSpec | NetnsHostSpec | SshHostSpec, lab_state_dir: Path | None = None
) -> Host:
    """A ready-to-use Host. Lab hosts are resolved through the lab's state (LabError if down);
    their lab labels are merged under the spec's own labels."""
    if isinstance(spec, LocalHostSpec):
        return LocalHost(name=name, address=spec.address, labels=dict(spec.labels))
    if isinstance(spec, SshHostSpec):
        fields = spec.model_dump(exclude={"kind", "labels", "jump"})
        return SshHost(name=name, labels=dict(spec.labels), jump=spec.jump, **fields)
    if spec.lab is not None and spec.host is not None:
        from netfleet.lab import resolve_host

        lh = resolve_host(spec.lab, spec.host, state_dir=lab_state_dir)
        # a lab knows its shapers: a credit shaper bursts, anything else does not
        shaped = [x for x in (lh.out, lh.in_) if x is not None]
        known = {"burstable": any(x.peak is not None for x in shaped)}
        labels = {**known, **lh.labels, **spec.labels}
        address = lh.address
        if spec.via == "gateway":
            from netfleet.lab.gateway import public_address

            address = public_address(spec.lab, lh, state_dir=lab_state_dir)
        return NetnsHost(
            name=name,
            address=address,
            labels=labels,
            namespace=lh.namespace,
            chroot=spec.chroot,
        )
    assert spec.namespace is not None and spec.address is not None
    return NetnsHost(
        name=name,
        address=spec.address,
        labels=dict(spec.labels),
        namespace=spec.namespace,
        chroot=spec.chroot,
    )
