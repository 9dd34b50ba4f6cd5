"""A routed path through a gateway: seed 003's public-address case.

With ``gateway:`` in the lab file, a router namespace ``nf-<lab>-gw`` joins the lab's bridge
(at the lab's MTU, e.g. 9000) and every host also gets a *public* address from the gateway's
subnet (a /32 on its ``eth0``). A host reaches the others' public addresses only through the
router, using its own public address as source, so both directions cross it. The router's
routes to the public addresses carry ``mtu`` (1500): it forwards nothing bigger and answers
"fragmentation needed", so the path MTU through the gateway is 1500 while the hosts' interface
MTU stays jumbo — exactly what tracepath showed on AWS public addresses. With ``rate`` the
router's ``eth0`` (its only interface, so both directions) gets a tbf: the gateway forwards at
most that much (seed 003: 4.7 Gbit/s on public addresses against 9.5 on private ones, the AZ's
gateway giving at most 5 Gbit/s). ICMP redirects are off
(the router would otherwise tell hosts to go direct). A spec reaches a lab host's public face with
``{kind: netns, lab: L, host: H, via: gateway}``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from netfleet.errors import LabError
from netfleet.lab.commands import in_netns, ip, run, tc
from netfleet.lab.models import Shaper
from netfleet.lab.shaping import tbf_args
from netfleet.lab.state import BRIDGE, INTERFACE, LabHost, LabState, read_state

ROUTER = "gw"
#: the label a host reached through the gateway carries, and so every run whose server it is
#: (:func:`gateway_label`): the gateway's cap in bit/s, or :data:`UNCAPPED`
RATE_LABEL = "lab_gateway_rate"
UNCAPPED = "uncapped"


def gateway_label(lab: str, state_dir: str | Path | None = None) -> dict[str, float | str]:
    """``{RATE_LABEL: cap}`` for a host reached through ``lab``'s gateway."""
    state = read_state(lab, state_dir)
    gateway = (state.gateway if state is not None else None) or {}
    rate = gateway.get("rate")
    return {RATE_LABEL: float(rate) if rate else UNCAPPED}


def uncapped_words(labels: dict[str, object] | None) -> str:
    """The sentence that goes beside a public-vs-private finding of runs through a lab gateway
    with no rate cap (empty otherwise): its throughput is the lab router's, not a cloud
    gateway's."""
    if not labels or labels.get(RATE_LABEL) != UNCAPPED:
        return ""
    return (
        "this lab's gateway has no rate cap (gateway.rate unset): throughput through it is the "
        "lab router's, not a cloud gateway's, so this compares MTUs only (the lab profile "
        "seed003 caps its gateway)"
    )


def router_namespace(lab: str) -> str:
    return f"nf-{lab}-{ROUTER}"


def router_port() -> str:
    return f"to-{ROUTER}"


def _sysctl(ns: str, *settings: str) -> None:
    in_netns(ns, "sysctl", "-q", "-w", *settings)


def build(state: LabState, create_namespace: Callable[[str], None]) -> None:
    """Create the router and the public addresses recorded in ``state.gateway``."""
    gw = state.gateway
    if gw is None:
        return
    rt, sw = gw["namespace"], state.switch
    create_namespace(rt)
    mtu = str(gw["link_mtu"])
    run(["ip", "link", "add", INTERFACE, "netns", rt, "mtu", mtu,
         "type", "veth", "peer", "name", router_port(), "netns", sw, "mtu", mtu])  # fmt: skip
    ip("address", "add", f"{gw['address']}/{gw['prefix']}", "dev", INTERFACE, ns=rt)
    ip("link", "set", "lo", "up", ns=rt)
    ip("link", "set", INTERFACE, "up", ns=rt)
    ip("link", "set", router_port(), "master", BRIDGE, "up", ns=sw)
    if gw.get("rate") is not None:
        # one interface carries both directions: this caps all the gateway forwards
        shaper = Shaper(rate=gw["rate"])
        tc("qdisc", "add", "dev", INTERFACE, "root", *tbf_args(shaper), ns=rt)
    _sysctl(
        rt,
        "net.ipv4.ip_forward=1",
        "net.ipv4.conf.all.send_redirects=0",
        f"net.ipv4.conf.{INTERFACE}.send_redirects=0",
    )
    for host in state.hosts.values():
        if host.public_address is None:
            continue
        ns = host.namespace
        ip("address", "add", f"{host.public_address}/32", "dev", INTERFACE, ns=ns)
        _sysctl(ns, "net.ipv4.conf.all.accept_redirects=0")
        ip("route", "add", gw["subnet"], "via", gw["address"], "src", host.public_address, ns=ns)
        ip("route", "add", f"{host.public_address}/32", "via", host.address,
           "mtu", str(gw["mtu"]), ns=rt)  # fmt: skip


def public_address(lab: str, host: LabHost, state_dir: str | Path | None = None) -> str:
    """The host's address behind the gateway; LabError when the lab has none."""
    if host.public_address is None:
        state = read_state(lab, state_dir)
        del state
        raise LabError(
            f"lab {lab!r} has no gateway, so host {host.name!r} has no public address",
            hint="add 'gateway: {mtu: 1500, subnet: 198.18.100.0/24}' to the lab file, or "
            "remove 'via: gateway'",
        )
    return host.public_address
