"""The advice rules. Thresholds are module constants, named in each finding."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from statistics import fmean
from typing import Any

from netfleet.advice import evidence as ev
from netfleet.advice.model import Advice
from netfleet.units import TCP_IP_OVERHEAD

CPU_BOUND_PERCENT = 90.0
#: 2 streams ≥ this × 1 stream: each flow is capped
FLOW_CAP_RATIO = 1.8
ASYMMETRY_RATIO = 1.5
#: retransmitted segments / segments sent
RETRANSMIT_RATE = 0.01


def _ok_throughput(envs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [
        e
        for e in envs
        if e.get("status") == "ok"
        and ev._obj(e.get("engine")).get("name") in ev.THROUGHPUT
        and ev.receiver_bps(e)
    ]


def _g(bps: float) -> str:
    return f"{bps / 1e9:.2f} Gbit/s"


def cpu_bound(env: Mapping[str, Any]) -> list[Advice]:
    out = []
    for role, pct in ev.cpu(env).items():
        if pct >= CPU_BOUND_PERCENT:
            host = ev._obj(env.get(role)).get("name")
            out.append(
                Advice(
                    "cpu-bound",
                    "warn",
                    f"{role} {host} used {pct:.0f} % CPU (≥ {CPU_BOUND_PERCENT:g} %) while "
                    f"moving {_g(ev.receiver_bps(env) or 0)}: the number is the tool's CPU "
                    "limit, not the network's",
                    "use engine 'throughput' (tool auto), iperf3-multi, iperf3 ≥ 3.16 or iperf2 "
                    "with more streams, or a bigger instance",
                    {f"{role}_cpu_percent": round(pct, 1), "receiver_bps": ev.receiver_bps(env)},
                    (str(env.get("run_id")),),
                )
            )
    return out


def gateway_mtu(env: Mapping[str, Any]) -> list[Advice]:
    pmtus, mtu = ev.path_mtus(env), ev.interface_mtu(env)
    if not pmtus or mtu is None or min(pmtus) >= mtu:
        return []
    return [
        Advice(
            "path-mtu",
            "warn",
            f"path MTU {min(pmtus)} is below the interface MTU {mtu} towards "
            f"{ev._obj(env.get('server')).get('address')}: traffic crosses a gateway",
            "use private addresses (same VPC/subnet) so the path keeps the jumbo MTU",
            {"path_mtu": min(pmtus), "interface_mtu": mtu},
            (str(env.get("run_id")),),
        )
    ]


def retransmits(env: Mapping[str, Any]) -> list[Advice]:
    sent_bytes, retrans = ev.sent(env)
    mtu = ev.interface_mtu(env) or 1500
    if not sent_bytes or retrans is None:
        return []
    segments = sent_bytes / max(1, min(mtu, 65536) - TCP_IP_OVERHEAD)
    rate = retrans / segments if segments else 0.0
    if rate < RETRANSMIT_RATE:
        return []
    return [
        Advice(
            "retransmits",
            "warn",
            f"{retrans:.0f} retransmits for ~{segments:.0f} segments ({rate:.1%} ≥ "
            f"{RETRANSMIT_RATE:.0%}): packets are dropped on the way (a policer, a full queue)",
            "look for a rate limiter (cloud allowance, shaper) or reduce streams/bitrate",
            {"retransmits": retrans, "segments": round(segments), "rate": round(rate, 4)},
            (str(env.get("run_id")),),
        )
    ]


def ena_exceeded(env: Mapping[str, Any]) -> list[Advice]:
    deltas = ev._obj(ev._obj(env.get("notes")).get("ena_allowance_deltas"))
    out = []
    for host, counters in deltas.items():
        hit = {k: v for k, v in ev._obj(counters).items() if isinstance(v, int) and v > 0}
        if hit:
            out.append(
                Advice(
                    "ena-allowance",
                    "warn",
                    f"{host}: ENA allowance exceeded during the run "
                    + ", ".join(f"{k} +{v}" for k, v in sorted(hit.items()))
                    + ": the instance's limit, not the network's",
                    "a bigger instance type (or fewer packets/flows): the cap is per instance",
                    {"host": host, **hit},
                    (str(env.get("run_id")),),
                )
            )
    return out


def flow_cap(envs: list[Mapping[str, Any]]) -> list[Advice]:
    groups: dict[tuple[Any, ...], dict[int, list[tuple[float, str]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for e in envs:
        p = ev.parallel(e)
        params = ev._obj(e.get("params"))
        if p is None or params.get("protocol") == "udp" or params.get("bitrate"):
            continue  # only unpaced TCP runs say anything about a per-flow cap
        key = (
            ev._obj(e.get("client")).get("name"),
            ev._obj(e.get("server")).get("name"),
            e.get("direction"),
        )
        groups[key][p].append((ev.receiver_bps(e) or 0.0, str(e.get("run_id"))))
    out = []
    for (client, server, direction), by_p in groups.items():
        if 1 not in by_p or 2 not in by_p:
            continue
        one, two = fmean(b for b, _ in by_p[1]), fmean(b for b, _ in by_p[2])
        if one and two / one >= FLOW_CAP_RATIO:
            out.append(
                Advice(
                    "per-flow-cap",
                    "info",
                    f"{client}→{server} {direction}: 2 streams gave {_g(two)}, {two / one:.2f}× "
                    f"1 stream's {_g(one)}: each flow is capped near {_g(one)}",
                    "measure with several streams (the cloud caps single flows, e.g. AWS "
                    "5 Gbit/s outside a placement group)",
                    {"one_stream_bps": one, "two_streams_bps": two, "ratio": round(two / one, 3)},
                    tuple(r for _, r in by_p[1] + by_p[2]),
                )
            )
    return out


def asymmetry(envs: list[Mapping[str, Any]]) -> list[Advice]:
    by_host: dict[tuple[Any, Any], dict[str, list[tuple[float, str]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for e in envs:
        if e.get("direction") not in ("out", "in"):
            continue
        subject = "client" if e.get("subject") == "client" else "server"
        peer = "server" if subject == "client" else "client"
        key = (ev._obj(e.get(subject)).get("name"), ev._obj(e.get(peer)).get("name"))
        by_host[key][str(e["direction"])].append((ev.receiver_bps(e) or 0.0, str(e["run_id"])))
    out = []
    for (host, peer), dirs in by_host.items():
        if not dirs.get("out") or not dirs.get("in"):
            continue
        o, i = fmean(b for b, _ in dirs["out"]), fmean(b for b, _ in dirs["in"])
        hi, lo = max(o, i), min(o, i)
        if lo and hi / lo > ASYMMETRY_RATIO:
            out.append(
                Advice(
                    "asymmetry",
                    "info",
                    f"{host} (with {peer}): out {_g(o)} vs in {_g(i)}, {hi / lo:.2f}× apart "
                    f"(> {ASYMMETRY_RATIO:g}×): in and out are limited separately",
                    "report both directions; size for the slower one",
                    {"out_bps": o, "in_bps": i, "ratio": round(hi / lo, 3)},
                    tuple(r for _, r in dirs["out"] + dirs["in"]),
                )
            )
    return out


def advise(envelopes: Iterable[Mapping[str, Any]]) -> list[Advice]:
    """Every finding over these runs: per run (CPU, path MTU, retransmits, ENA) and across
    runs (per-flow cap, asymmetry)."""
    envs = list(envelopes)
    ok = _ok_throughput(envs)
    items: list[Advice] = []
    for e in ok:
        items += cpu_bound(e) + gateway_mtu(e) + retransmits(e)
    for e in envs:
        items += ena_exceeded(e)
    items += flow_cap(ok) + asymmetry(ok)
    return items


def advise_doctor(hosts: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> list[Advice]:
    """Findings from ``netfleet doctor``: gateway MTU, unreachable peers, missing tools,
    single-threaded iperf3 on multi-core hosts, ENA counters to watch."""
    items: list[Advice] = []
    for p in pairs:
        pmtu, mtu = p.get("path_mtu"), p.get("interface_mtu")
        if pmtu and mtu and pmtu < mtu:
            items.append(
                Advice(
                    "path-mtu",
                    "warn",
                    f"{p['client']}→{p['server']} ({p['address']}): path MTU {pmtu} < interface "
                    f"MTU {mtu}: traffic crosses a gateway",
                    "use private addresses so the path keeps the interface MTU",
                    {"path_mtu": pmtu, "interface_mtu": mtu},
                )
            )
        if not p.get("ping"):
            items.append(
                Advice(
                    "no-ping", "info", f"{p['client']}→{p['address']}: no ICMP echo reply",
                    "allow ICMP (security group/firewall) or skip ping tests", {},
                )
            )  # fmt: skip
        if not p.get("port"):
            items.append(
                Advice(
                    "port-blocked", "error",
                    f"{p['client']}→{p['server']}: {p.get('port_detail')}",
                    "open TCP 20000-39999 between the hosts (security group, firewall)", {},
                )
            )  # fmt: skip
    for h in hosts:
        tools, cpus = h.get("tools") or {}, h.get("cpus") or 1
        missing = [t for t in ("iperf3", "iperf2", "sockperf") if not tools.get(t)]
        if missing:
            items.append(
                Advice(
                    "missing-tools", "info", f"{h['host']}: {', '.join(missing)} not installed",
                    "apt-get install iperf3 iperf sockperf (some engines need them)",
                    {"missing": missing},
                )
            )  # fmt: skip
        caps = h.get("capabilities") or {}
        if tools.get("iperf3") and cpus > 1 and not caps.get("iperf3 one thread per stream"):
            items.append(
                Advice(
                    "single-threaded-iperf3", "info",
                    f"{h['host']}: iperf3 {tools['iperf3']} runs all streams in one thread on "
                    f"a {cpus}-CPU host: a fast link will be CPU-bound",
                    "use engine 'throughput' (auto picks iperf3-multi or iperf2)",
                    {"iperf3": tools["iperf3"], "cpus": cpus},
                )
            )  # fmt: skip
        if h.get("ena_counters"):
            items.append(
                Advice(
                    "ena-counters", "info",
                    f"{h['host']}: ENA allowance counters present: netfleet records their deltas "
                    "around every run",
                    "nothing to do", dict(h["ena_counters"]),
                )
            )  # fmt: skip
    return items
