"""A second cloud behind the provider seam: machines are network namespaces on this machine.

It exists to prove the seam (issue 24): everything cloud-specific is here, and the campaign
runs through the same provider-neutral lifecycle as AWS (``netfleet.cloud.lifecycle``:
plan → acquire → bootstrap → measure → collect → release through ``give_back``).

* the network — one namespace per campaign holding a bridge (a cloud's VPC), a lease of its own;
* a machine — a namespace joined to that bridge by a veth pair, addressed in 198.18.0.0/15,
  its egress shaped with ``tbf`` to its type's advertised rate (the catalogue, :data:`TYPES`);
* ownership — before a namespace is created, a claim file holding the lease id is written
  under ``$NETFLEET_NSCLOUD_DIR/<campaign>/`` (this cloud's tags); a release deletes only a
  namespace whose claim names the lease, and a campaign release only the campaign's claims.
  A campaign is its hosts' common namespace prefix (``<campaign>-<host>``).

Its hosts are ``kind: netns`` hosts giving ``namespace`` + ``address`` (the spec's host kinds
are a closed set, so this cloud borrows that one: it creates the namespace the host names) and
their machine type as the label ``machine_type``. ``python -m tests.nscloud run SPEC …`` is
``netfleet`` with this cloud registered for ``kind: netns``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from netfleet.cloud.lifecycle import CloudProvider
from netfleet.cloud.seam import Machine, Price, Quota, Released, Scope
from netfleet.errors import HostError
from netfleet.hosts.base import Host
from netfleet.hosts.netns import NetnsHost
from netfleet.hosts.provider import HostRequest, Lease, LeaseLog

ENV_DIR = "NETFLEET_NSCLOUD_DIR"
NAME = "netns"  # the host kind it serves (and records with every lease)


@dataclass(frozen=True)
class NsType:
    """A machine type as this cloud advertises it (satisfies ``seam.Advertised``)."""

    instance_type: str
    vcpus: int
    baseline_gbps: float
    peak_gbps: float
    usd_per_hour: float | None  #: None: this cloud cannot price it (the guard refuses)

    @property
    def burstable(self) -> bool:
        return self.peak_gbps > self.baseline_gbps

    def labels(self) -> dict[str, str]:
        return {
            "cloud": "nscloud",
            "instance_type": self.instance_type,
            "baseline_gbps": f"{self.baseline_gbps:g}",
            "peak_gbps": f"{self.peak_gbps:g}",
        }


TYPES = {
    "ns.small": NsType("ns.small", 1, 0.2, 0.2, 0.01),
    "ns.large": NsType("ns.large", 2, 1.0, 1.0, 0.04),
    "ns.unpriced": NsType("ns.unpriced", 1, 0.2, 0.2, None),
}
#: the account's vCPU limit (this cloud's quota), for the guard's tests
VCPUS_ENV = "NETFLEET_NSCLOUD_VCPUS"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], check=True, capture_output=True, text=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


class NsCloud:
    """The seam (``netfleet.cloud.seam.Cloud``) on network namespaces."""

    name = NAME

    def __init__(self, state_root: Path | None = None) -> None:
        self.state_root = Path(state_root or os.environ[ENV_DIR])

    # -- plan ------------------------------------------------------------------------------
    def _type(self, req: HostRequest) -> NsType:
        wanted = str(req.spec.labels.get("machine_type", ""))
        if wanted not in TYPES:
            raise HostError(
                f"host {req.name}: nscloud offers no machine type {wanted!r}",
                hint=f"label it machine_type: one of {', '.join(sorted(TYPES))}",
            )
        return TYPES[wanted]

    def catalogue(self, requests: Sequence[HostRequest]) -> dict[str, NsType]:
        return {t.instance_type: t for t in map(self._type, requests)}

    def price(self, requests: Sequence[HostRequest], hours: float) -> Price:
        known = [t.usd_per_hour for t in map(self._type, requests) if t.usd_per_hour is not None]
        unknown = tuple(sorted({t.instance_type for t in map(self._type, requests)
                                if t.usd_per_hour is None}))  # fmt: skip
        usd = sum(known) * hours
        return Price(None if unknown else usd, "tests/nscloud.py TYPES", unknown, usd)

    def quota(self, requests: Sequence[HostRequest]) -> Quota:
        limit = int(os.environ.get(VCPUS_ENV, "64"))
        need = sum(self._type(r).vcpus for r in requests)
        if need > limit:
            return Quota((f"nscloud vCPUs: {need} needed, the limit is {limit} ({VCPUS_ENV})",))
        return Quota()

    # -- acquire ---------------------------------------------------------------------------
    def _claims(self, campaign: str) -> Path:
        return self.state_root / campaign

    def _claim(self, campaign: str, namespace: str, lease: Lease) -> None:
        if namespace in namespaces():
            raise HostError(f"namespace {namespace} exists already: not this cloud's to use")
        self._claims(campaign).mkdir(parents=True, exist_ok=True)
        (self._claims(campaign) / namespace).write_text(lease.id)

    async def acquire(self, requests: list[HostRequest], log: LeaseLog) -> list[Machine]:
        campaign = campaign_of(requests)
        net = f"{campaign}-net"
        where = {"kind": "network", "campaign": campaign, "namespace": net}
        lease = log.intent(self.name, "network", where)  # before anything exists
        self._claim(campaign, net, lease)
        ip("netns", "add", net)
        ip("-n", net, "link", "add", "br0", "type", "bridge")
        ip("-n", net, "link", "set", "br0", "up")
        log.acquired(lease)
        machines = []
        for i, req in enumerate(requests):
            ns, address = str(req.spec.namespace), str(req.spec.address)
            where = {"kind": "machine", "campaign": campaign, "namespace": ns}
            lease = log.intent(self.name, req.name, where)
            self._claim(campaign, ns, lease)
            ip("netns", "add", ns)
            ip("-n", ns, "link", "set", "lo", "up")
            peer = ("peer", "name", "eth0", "netns", ns)
            ip("-n", net, "link", "add", f"p{i}", "type", "veth", *peer)
            ip("-n", net, "link", "set", f"p{i}", "master", "br0", "up")
            ip("-n", ns, "addr", "add", f"{address}/15", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            rate = f"{self._type(req).baseline_gbps * 1000:g}mbit"
            shape = ("tbf", "rate", rate, "burst", "256kb", "latency", "50ms")
            tc = ["tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root", *shape]
            subprocess.run(tc, check=True, capture_output=True)
            log.acquired(lease)
            machines.append(Machine(req, lease, ns))
        return machines

    # -- bootstrap -------------------------------------------------------------------------
    async def bootstrap(self, machines: list[Machine]) -> list[Host]:
        hosts: list[Host] = []
        for m in machines:
            ip("-n", str(m.detail), "link", "show", "eth0", "up")  # ready: its link is up
            labels = {**self._type(m.request).labels(), **m.request.spec.labels}
            hosts.append(
                NetnsHost(
                    name=m.request.name,
                    address=str(m.request.spec.address),
                    labels={k: str(v) for k, v in labels.items()},
                    namespace=str(m.detail),
                )
            )
        return hosts

    # -- release ---------------------------------------------------------------------------
    def _release_namespace(self, campaign: str, namespace: str, lease_id: str | None) -> str:
        claim = self._claims(campaign) / namespace
        if not claim.is_file():
            return "gone" if namespace not in namespaces() else _not_ours(namespace)
        if lease_id is not None and claim.read_text() != lease_id:
            _not_ours(namespace)
        if namespace in namespaces():
            ip("netns", "delete", namespace)
            outcome = "released"
        else:
            outcome = "gone"
        claim.unlink()
        return outcome

    async def release(self, scope: Scope) -> Released:
        if scope.lease is not None:
            res = scope.lease.resource
            campaign, ns = str(res["campaign"]), str(res["namespace"])
            return Released(self._release_namespace(campaign, ns, scope.lease.id))
        if scope.campaign is not None:
            claims = self._claims(scope.campaign)
            names = sorted(p.name for p in claims.iterdir()) if claims.is_dir() else []
            # machines before the network they are joined to
            for ns in sorted(names, key=lambda n: n.endswith("-net")):
                self._release_namespace(scope.campaign, ns, None)
            left = len(set(names) & namespaces())
            return Released("released", remaining={"namespaces": left})
        return Released("gone")  # nothing here expires: a namespace costs nothing idle


def campaign_of(requests: Sequence[HostRequest]) -> str:
    """A campaign here is its hosts' common namespace prefix (``<campaign>-<host>``)."""
    found = {str(r.spec.namespace).rpartition("-")[0] for r in requests}
    if len(found) != 1 or not next(iter(found)):
        raise HostError(f"nscloud: name the namespaces <campaign>-<host> (got {sorted(found)})")
    return found.pop()


def _not_ours(namespace: str) -> str:
    raise HostError(f"namespace {namespace} carries no claim of this lease: left alone")


def provider() -> CloudProvider:
    """The entry point's target (``[project.entry-points."netfleet.hosts"]``)."""
    return CloudProvider(NsCloud())


if __name__ == "__main__":
    from netfleet.hosts.registry import register_provider

    register_provider(NAME, provider)
    from netfleet.cli.main import main

    main()
