"""The advice rules. Thresholds are module constants, named in each finding."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from statistics import fmean
from typing import Any

from netfleet.advice import evidence as ev
from netfleet.advice.model import Advice
from netfleet.engines import tools as registry_tools
from netfleet.engines.burstable import lab_rate_scale
from netfleet.engines.contract import cpu_limits, engine_cpu
from netfleet.engines.probes import VERSION_PROBES
from netfleet.hosts.packages import install_hint
from netfleet.units import MAX_RATE, TCP_IP_OVERHEAD, fmt_rate, plausible_rate

#: 2 streams ≥ this × 1 stream: each flow is capped
FLOW_CAP_RATIO = 1.8
ASYMMETRY_RATIO = 1.5
#: retransmitted segments / segments sent
RETRANSMIT_RATE = 0.01
#: a loaded phase whose median round trip grows by more than this over idle (ms): bufferbloat
BLOAT_MS = 5.0
#: a paced run (``-b``) that received at least this fraction of its pacing measured the pacing
PACED_SHARE = 0.95


def _ok_throughput(envs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Complete throughput runs with a received rate a link can carry."""
    return [
        e
        for e in envs
        if e.get("status") == "ok"
        and ev.is_throughput(e)
        and ev.receiver_bps(e)
        and plausible_rate(ev.receiver_bps(e))
    ]


def impossible_rates(envs: Iterable[Mapping[str, Any]]) -> list[Advice]:
    """Complete throughput runs whose received rate no link can carry (NaN, infinite,
    negative, above :data:`~netfleet.units.MAX_RATE`): left out of every other finding, and
    counted here."""
    bad = [
        str(e.get("run_id"))
        for e in envs
        if e.get("status") == "ok"
        and ev.is_throughput(e)
        and (bps := ev.receiver_bps(e)) is not None
        and not plausible_rate(bps)
    ]
    if not bad:
        return []
    return [
        Advice(
            "impossible-rate",
            "warn",
            f"{len(bad)} run(s) report a received rate no link can carry (NaN, infinite, "
            f"negative or above {fmt_rate(MAX_RATE)}): left out of the advice",
            "a broken or forged result: look at those raw files",
            {"runs": len(bad)},
            tuple(bad),
        )
    ]


def _g(bps: float) -> str:
    """A rate in advice: Gbit/s from 1 Gbit/s, Mbit/s with 3 significant digits below (0.05 vs
    0.03 Gbit/s hid two rates 1.95× apart, issue 36)."""
    if abs(bps) >= 1e9:
        return f"{bps / 1e9:.2f} Gbit/s"
    return f"{bps / 1e6:.3g} Mbit/s"


def _labels(env: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = env.get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _cloud(
    envs: Iterable[Mapping[str, Any]], figures: dict[str, float]
) -> tuple[str, dict[str, float]]:
    """A scaled lab's figures as the cloud's they stand for (each ÷ the runs' one
    ``lab_scale``): words for the message (``" (lab ×0.05; cloud out 5.73 Gbit/s vs in …)"``,
    the ``figures``' names and rates) and evidence (``lab_scale``, ``cloud_<name>_bps``). Nothing
    when the runs are no scaled lab's, or of several scales (no one cloud figure)."""
    scales = {lab_rate_scale(_labels(e)) for e in envs}
    if len(scales) != 1 or (scale := scales.pop()) is None:
        return "", {}
    words = " vs ".join(f"{name} {_g(bps / scale)}" for name, bps in figures.items())
    evidence = {f"cloud_{name.replace(' ', '_')}_bps": bps / scale for name, bps in figures.items()}
    return f" (lab ×{scale:g}; cloud {words})", {"lab_scale": scale, **evidence}


def cpu_bound(env: Mapping[str, Any]) -> list[Advice]:
    """The engine's CPU limited the run (:func:`netfleet.engines.contract.cpu_limits`, the rule
    analyze's "host-limited" uses too): its own CPU at the limit, or a busy machine starving an
    engine that needed CPU. An engine that used little CPU is never this, however busy the
    machine (/proc/stat: everyone's processes)."""
    notes = ev._obj(env.get("notes"))
    cpu, source = engine_cpu(ev.cpu(env), notes)
    busy = ev._obj(notes.get("host_cpu")).get("busy_percent")
    limits = cpu_limits(cpu, busy if isinstance(busy, int | float) else None, source)
    out = []
    for role, why in limits.items():
        who = f"{role} {ev.host(env, role)}" if role in ("client", "server") else "the host"
        found: dict[str, Any] = {"receiver_bps": ev.receiver_bps(env)}
        if role in cpu:
            found[f"{role}_cpu_percent"] = round(cpu[role], 1)
        if isinstance(busy, int | float):
            found["machine_busy_percent"] = busy
        out.append(
            Advice(
                "cpu-bound",
                "warn",
                f"{who}: {why}, while moving {_g(ev.receiver_bps(env) or 0)}: the number may be "
                "the tool's CPU limit, not the network's",
                "use engine 'throughput' (tool auto), iperf3-multi, iperf3 ≥ 3.16 or iperf2 "
                "with more streams, a bigger instance, or a quieter machine",
                found,
                (str(env.get("run_id")),),
            )
        )
    return out


def gateway_mtu(env: Mapping[str, Any]) -> list[Advice]:
    pmtus, mtu = ev.path_mtus(env), ev.interface_mtu(env)
    if not pmtus or mtu is None or min(pmtus) >= mtu:
        return []
    found: dict[str, Any] = {"path_mtu": min(pmtus), "interface_mtu": mtu}
    uncapped = _uncapped_gateway(ev._obj(env.get("labels")), found)
    return [
        Advice(
            "path-mtu",
            "warn",
            f"path MTU {min(pmtus)} is below the interface MTU {mtu} towards "
            f"{ev._obj(env.get('server')).get('address')}: traffic crosses a gateway{uncapped}",
            "use private addresses (same VPC/subnet) so the path keeps the jumbo MTU",
            found,
            (str(env.get("run_id")),),
        )
    ]


def _uncapped_gateway(labels: Mapping[str, Any] | None, found: dict[str, Any]) -> str:
    """``; `` + the words saying a lab's gateway has no rate cap (and ``found`` says so too),
    or nothing: a path-MTU finding in a lab whose gateway forwards at any rate is about the MTU
    only, never a cloud gateway's throughput (issue 36)."""
    from netfleet.lab.gateway import RATE_LABEL, uncapped_words

    words = uncapped_words(dict(labels or {}))
    if labels and RATE_LABEL in labels:
        found["lab_gateway_rate"] = labels[RATE_LABEL]
    return f"; {words}" if words else ""


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


def paced(env: Mapping[str, Any]) -> list[Advice]:
    """A TCP run paced by ``-b`` (the spec's ``bitrate``; iperf3's ``target_bitrate`` of an
    imported file) that received about its pacing: it measured the pacing, not the path."""
    params = ev.params(env)
    if str(params.get("protocol", "tcp")).lower() != "tcp" or not params.get("bitrate"):
        return []
    from netfleet.units import parse_rate

    try:
        pace = parse_rate(str(params["bitrate"]))
    except ValueError:
        return []
    got = ev.receiver_bps(env)
    if not pace or got is None or got < PACED_SHARE * pace:
        return []
    return [
        Advice(
            "paced",
            "warn",
            f"paced at {_g(pace)} (-b) and received {_g(got)}: the run measured its pacing, "
            "not the path (the path may carry more)",
            "measure without -b (bitrate) to know what the path carries",
            {"bitrate_bps": pace, "received_bps": got},
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


def _ms(us: float) -> str:
    return f"{us / 1000:.3g} ms"


def bufferbloat(env: Mapping[str, Any]) -> list[Advice]:
    """A latency-under-load run whose load grows the median round trip by more than
    :data:`BLOAT_MS` over idle: a queue fills at the bottleneck. Its size ≈ the one-way delay
    the load adds (irtt's; the round trip's with ping) × the rate through it."""
    if ev.engine(env) != "latency-under-load" or env.get("status") != "ok":
        return []
    from netfleet.engines.loaded_latency import summarize

    result = env.get("result")
    if not isinstance(result, Mapping):
        return []
    phases = summarize(result, ev.params(env))["phases"]
    idle = next((p for p in phases if p["phase"] == "idle"), None)
    if idle is None or idle.get("p50_us") is None:
        return []
    out = []
    for p in phases:
        inflation = p.get("inflation_p50_us")
        if p["phase"] == "idle" or inflation is None or inflation < BLOAT_MS * 1000:
            continue
        queues: dict[str, dict[str, float]] = {}
        for way, delay_key, rate_key in (
            ("up", "inflation_send_us", "up_bps"),
            ("down", "inflation_receive_us", "down_bps"),
        ):
            rate = p.get(rate_key)
            if p["phase"] not in (way, "both") or not rate:
                continue
            delay = p.get(delay_key)
            delay = inflation if delay is None else delay  # ping: the round trip's growth
            if delay > 0:
                queues[way] = {
                    "goodput_bps": rate,
                    "delay_us": delay,
                    "bytes": delay / 1e6 * rate / 8,
                }
        where = "; ".join(
            f"{way}: ≈ {q['bytes'] / 1e3:,.0f} kB "
            f"({_ms(q['delay_us'])} × {fmt_rate(q['goodput_bps'])} goodput)"
            for way, q in queues.items()
        )
        rpm = (idle.get("rpm"), p.get("rpm"))
        rpm_words = f"; {rpm[0]:,.0f} → {rpm[1]:,.0f} RPM" if None not in rpm else ""
        short = (
            " The load did not fill the path: the queue can hold more."
            if p.get("reached") is False
            else ""
        )
        out.append(
            Advice(
                "bufferbloat",
                "warn",
                f"{ev.host(env, 'client')}→{ev.host(env, 'server')} {p['phase']}: the load adds "
                f"{_ms(inflation)} to the median round trip ({_ms(idle['p50_us'])} idle → "
                f"{_ms(p['p50_us'])}{rpm_words}): a queue fills at the bottleneck"
                + (f" — {where} (added delay × rate)" if where else "")
                + "."
                + short,
                "a queue that holds less time: an AQM (fq_codel, cake) or a smaller queue on the "
                "bottleneck (a shaper's limit); from the senders, fewer bytes in flight (BBR, "
                "smaller windows); latency-sensitive traffic on another path",
                {
                    "phase": p["phase"],
                    "idle_p50_us": idle["p50_us"],
                    "loaded_p50_us": p["p50_us"],
                    "inflation_p50_us": inflation,
                    "idle_rpm": rpm[0],
                    "loaded_rpm": rpm[1],
                    "queues": queues,
                    "load_reached_link": p.get("reached"),
                },
                (str(env.get("run_id")),),
            )
        )
    return out


def flow_cap(envs: list[Mapping[str, Any]]) -> list[Advice]:
    """One stream against the fewest streams above one between the same hosts, direction and
    protocol: n streams giving ≥ :data:`FLOW_CAP_RATIO`/2 × n times one stream's rate means
    each flow is capped."""
    groups: dict[tuple[Any, ...], dict[int, list[tuple[float, str]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    runs: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for e in envs:
        p = ev.parallel(e)
        params = ev.params(e)
        if p is None or params.get("protocol") == "udp" or params.get("bitrate"):
            continue  # only unpaced TCP runs say anything about a per-flow cap
        key = (ev.host(e, "client"), ev.host(e, "server"), e.get("direction"))
        groups[key][p].append((ev.receiver_bps(e) or 0.0, str(e.get("run_id"))))
        runs[key].append(e)
    out = []
    for key, by_p in groups.items():
        client, server, direction = key
        more = sorted(n for n in by_p if n > 1)
        if 1 not in by_p or not more:
            continue
        n = more[0]
        one, many = fmean(b for b, _ in by_p[1]), fmean(b for b, _ in by_p[n])
        needed = FLOW_CAP_RATIO / 2 * n
        if one and many / one >= needed:
            cloud, figures = _cloud(runs[key], {f"{n} streams": many, "1 stream": one})
            out.append(
                Advice(
                    "per-flow-cap",
                    "info",
                    f"{client}→{server} {direction}: {n} streams gave {_g(many)}, "
                    f"{many / one:.2f}× 1 stream's {_g(one)}: each flow is capped near "
                    f"{_g(one)}{cloud}",
                    f"measure with {n} or more streams (-P {n}): the cloud caps single flows "
                    "(e.g. AWS 5 Gbit/s outside a placement group)",
                    {
                        "streams": n,
                        "one_stream_bps": one,
                        "streams_bps": many,
                        "ratio": round(many / one, 3),
                        **figures,
                    },
                    tuple(r for _, r in by_p[1] + by_p[n]),
                )
            )
    return out


def asymmetry(envs: list[Mapping[str, Any]]) -> list[Advice]:
    """Out against in for one host with one peer: more than :data:`ASYMMETRY_RATIO` apart
    means the directions are limited separately."""
    by_host: dict[tuple[Any, Any], dict[str, list[tuple[float, str]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    runs: dict[tuple[Any, Any], list[Mapping[str, Any]]] = defaultdict(list)
    for e in envs:
        if e.get("direction") not in ("out", "in"):
            continue
        subject = "client" if e.get("subject") == "client" else "server"
        peer = "server" if subject == "client" else "client"
        key = (ev.host(e, subject), ev.host(e, peer))
        by_host[key][str(e["direction"])].append((ev.receiver_bps(e) or 0.0, str(e["run_id"])))
        runs[key].append(e)
    out = []
    for (host, peer), dirs in by_host.items():
        if not dirs.get("out") or not dirs.get("in"):
            continue
        o, i = fmean(b for b, _ in dirs["out"]), fmean(b for b, _ in dirs["in"])
        hi, lo = max(o, i), min(o, i)
        if lo and hi / lo > ASYMMETRY_RATIO:
            cloud, figures = _cloud(runs[(host, peer)], {"out": o, "in": i})
            out.append(
                Advice(
                    "asymmetry",
                    "info",
                    f"{host} (with {peer}): out {_g(o)} vs in {_g(i)}{cloud}, {hi / lo:.2f}× "
                    f"apart (> {ASYMMETRY_RATIO:g}×): in and out are limited separately",
                    "report both directions; size for the slower one",
                    {"out_bps": o, "in_bps": i, "ratio": round(hi / lo, 3), **figures},
                    tuple(r for _, r in dirs["out"] + dirs["in"]),
                )
            )
    return out


def advise(envelopes: Iterable[Mapping[str, Any]]) -> list[Advice]:
    """Every finding over these runs: per run (CPU, path MTU, retransmits, ENA, bufferbloat)
    and across runs (per-flow cap, asymmetry)."""
    envs = list(envelopes)
    ok = _ok_throughput(envs)
    items: list[Advice] = []
    for e in ok:
        items += cpu_bound(e) + gateway_mtu(e) + retransmits(e) + paced(e)
    for e in envs:
        items += ena_exceeded(e) + bufferbloat(e)
    items += flow_cap(ok) + asymmetry(ok) + impossible_rates(envs)
    return items


#: doctor's name of a tool → its command (iperf 2 is reported as "iperf2", run as "iperf")
COMMANDS = {name: argv[0] for name, (argv, _) in VERSION_PROBES.items()}


def engine_tools(reported: Mapping[str, Any]) -> list[str]:
    """The engine registry's tools under doctor's names, and any other tool the report lists
    except the system ones (``ethtool``, ``tracepath``)."""
    names = {argv: name for name, argv in COMMANDS.items()}
    found = [names.get(t, t) for t in registry_tools()]
    return found + [t for t in reported if t not in found and t not in SYSTEM_TOOLS]


SYSTEM_TOOLS = ("ethtool", "tracepath")


def advise_doctor(hosts: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> list[Advice]:
    """Findings from ``netfleet doctor``: gateway MTU, unreachable peers, missing tools,
    single-threaded iperf3 on multi-core hosts, ENA counters to watch."""
    items: list[Advice] = []
    for p in pairs:
        pmtu, mtu = p.get("path_mtu"), p.get("interface_mtu")
        if pmtu and mtu and pmtu < mtu:
            found: dict[str, Any] = {"path_mtu": pmtu, "interface_mtu": mtu}
            uncapped = _uncapped_gateway(p.get("labels"), found)
            items.append(
                Advice(
                    "path-mtu",
                    "warn",
                    f"{p['client']}→{p['server']} ({p['address']}): path MTU {pmtu} < interface "
                    f"MTU {mtu}: traffic crosses a gateway{uncapped}",
                    "use private addresses so the path keeps the interface MTU",
                    found,
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
        missing = [t for t in engine_tools(tools) if not tools.get(t)]
        if missing:
            items.append(
                Advice(
                    "missing-tools", "info", f"{h['host']}: {', '.join(missing)} not installed",
                    install_hint([COMMANDS.get(t, t) for t in missing])
                    + " (the engines that use them need them)",
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
