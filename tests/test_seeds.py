"""docs/seeds.md, run: each of the five field reports reproduced on the lab with the commands the
walk-through shows (in-process CLI), and its output checked against the lab's shapers. Shaped
runs of a few seconds each (seed 004: the r4.large bucket needs ~15 s at peak, and a loaded
machine's lower peak makes it last longer: 25 s leave room for the baseline); the lab profiles
of src/netfleet/lab/profiles, cut to the hosts each walk-through uses and given a unique name
and subnet (other tests may have a lab up at the same time)."""

from __future__ import annotations

import gzip
import json
import os
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from netfleet import lab
from netfleet.cli.boundary import guarded
from netfleet.cli.main import app
from tests.labkit import unique_name

pytestmark = [
    pytest.mark.netns,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root"),
]

PROFILES = Path(__file__).resolve().parents[1] / "src" / "netfleet" / "lab" / "profiles"
GOODPUT = 1448 / 1514


@contextmanager
def profile_lab(
    tmp_path: Path, profile: str, hosts: list[str], subnet: str, gateway: str | None = None
) -> Iterator[tuple[str, Path]]:
    """The profile's lab with only ``hosts``, a unique name and ``subnet``; always torn down."""
    doc = yaml.safe_load((PROFILES / f"{profile}.yaml").read_text())
    name = unique_name(profile[:2])
    doc.update(name=name, subnet=subnet, hosts={h: doc["hosts"][h] for h in hosts})
    if gateway is not None:
        doc["gateway"]["subnet"] = gateway
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(doc))
    state = tmp_path / "labstate"
    lab.up(lab.load_lab(f), state_dir=state)
    try:
        yield name, state
    finally:
        lab.down(name, state_dir=state)


def cli(capsys: Any, *args: str) -> str:
    """One netfleet command, in process; its stdout (asserting exit 0)."""
    capsys.readouterr()
    code = guarded(lambda: app(list(args), standalone_mode=False, prog_name="netfleet"))
    out = capsys.readouterr().out
    assert code == 0, (args, out)
    return out


def cli_json(capsys: Any, *args: str) -> dict[str, Any]:
    return dict(json.loads(cli(capsys, *args, "--format", "json")))


def spec(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / f"{name}.yaml"
    p.write_text(textwrap.dedent(text))
    return str(p)


def run_and_ingest(capsys: Any, tmp_path: Path, spec_path: str, state: Path) -> tuple[str, str]:
    results, catalog = str(tmp_path / "results"), str(tmp_path / "catalog")
    cli(capsys, "run", spec_path, "--results", results, "--state-dir", str(state))
    cli(capsys, "ingest", "--results", results, "--catalog", catalog)
    return results, catalog


def test_seed000_fargate_out_vs_in_and_price(tmp_path: Path, capsys: Any) -> None:
    hosts = ["server", "f2048-4g", "f1024-8g"]
    with profile_lab(tmp_path, "fargate", hosts, "198.18.71.0/24") as (name, state):
        s = spec(
            tmp_path,
            "fargate",
            f"""\
            campaign: fargate-tiers
            hosts:
              big: {{kind: netns, lab: {name}, host: server}}
              f2048-4g: {{kind: netns, lab: {name}, host: f2048-4g}}
              f1024-8g: {{kind: netns, lab: {name}, host: f1024-8g}}
            tests:
              - name: tput
                engine: iperf3
                server: big
                subject: client
                # five 1 s intervals, not three: a p50 that two slow intervals on a busy
                # machine cannot move (CI at b37978d: 680 Mbit/s read 6 % low at three)
                params: {{duration: 5, omit: 1, parallel: 2}}
                matrix:
                  client: [f2048-4g, f1024-8g]
                  direction: [out, in]
            """,
        )
        _, catalog = run_and_ingest(capsys, tmp_path, s, state)
    sheet = cli_json(capsys, "cheatsheet", "--catalog", catalog)
    p50 = {(r["instance_type"], r["direction"]): r["p50"] for r in sheet["rows"]}
    # the 2048/4096 tier: out 3404, in 319 Mbit/s in the seed; the lab ×0.2: 680.8 / 63.8
    out, in_ = p50["fargate-2048-4096", "out"], p50["fargate-2048-4096", "in"]
    assert abs(out * 1e9 / (680.8e6 * GOODPUT) - 1) < 0.05, out
    assert abs((out / in_) / (680.8 / 63.8) - 1) < 0.1, (out, in_)
    assert any("lab at ×0.2" in n for n in sheet["notes"])
    # issue 36: the cloud figures, as the seed gives them, and the profile's 4.4 % said
    cloud = cli_json(capsys, "cheatsheet", "--catalog", catalog, "--scale", "cloud")
    c50 = {(r["instance_type"], r["direction"]): r["p50"] for r in cloud["rows"]}
    assert c50["fargate-2048-4096", "out"] == out / 0.2
    assert any("4.4 % under" in n for n in cloud["notes"]), cloud["notes"]
    price = cli_json(capsys, "report", "price", "--catalog", catalog, "--target", "1gbit")
    row = next(
        r for r in price["rows"]
        if r["instance_type"] == "fargate-2048-4096" and r["direction"] == "out"
    )  # fmt: skip
    # the cloud figure stands for 3.4 Gbit/s wire, 3.25 goodput; $/Gbit/s divides the cloud's
    assert abs(row["cloud_sustained_gbps"] / (3.404 * GOODPUT) - 1) < 0.05, row
    per = row["usd_per_sustained_gbps_hour"]
    assert abs(per / (0.152 / row["cloud_sustained_gbps"]) - 1) < 1e-9, row
    assert any("4.4 % under" in n for n in price["notes"]), price["notes"]


@pytest.fixture(scope="module")
def gateway_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("seedgw")
    with profile_lab(tmp, "gateway", ["a", "b"], "198.18.73.0/24", "198.18.173.0/24") as found:
        yield found


def test_seed001_latency_throughput_and_price_per_topology(
    gateway_lab: tuple[str, Path], tmp_path: Path, capsys: Any
) -> None:
    name, state = gateway_lab
    s = spec(
        tmp_path,
        "topologies",
        f"""\
        campaign: topologies
        hosts:
          a: {{kind: netns, lab: {name}, host: a,
              labels: {{topology: same-subnet, price_per_hour: 1.59}}}}
          b: {{kind: netns, lab: {name}, host: b}}
          apub: {{kind: netns, lab: {name}, host: a, via: gateway,
                 labels: {{topology: via-gateway, price_per_hour: 1.59}}}}
          bpub: {{kind: netns, lab: {name}, host: b, via: gateway}}
        tests:
          - {{name: rr, engine: latency, client: a, server: b, params: {{duration: 1, size: 90}}}}
          - {{name: rrgw, engine: latency, client: apub, server: bpub,
              params: {{duration: 1, size: 90}}}}
          - {{name: icmp, engine: ping, client: a, server: b,
              params: {{count: 10, interval: 0.02, size: 1400}}}}
          - {{name: tput, engine: iperf3, client: a, server: b, params: {{duration: 2}}}}
          - {{name: tputgw, engine: iperf3, client: apub, server: bpub, params: {{duration: 2}},
              matrix: {{parallel: [1, 2]}}}}
        """,
    )
    results, catalog = run_and_ingest(capsys, tmp_path, s, state)
    table = cli_json(capsys, "report", "topology", "--catalog", catalog)
    rows = {r["topology"]: r for r in table["rows"]}
    assert set(rows) == {"same-subnet", "via-gateway"}
    for r in rows.values():
        assert r["rr_mean_us"] > 0 and r["throughput_gbps"] > 0
        assert r["rr_p99_worst_run_us"] >= r["rr_p99_us"]
        assert r["usd_per_month"] == pytest.approx(1.59 * 730)
    assert any("mean over runs of each run's own figure" in n for n in table["notes"])
    advice = cli_json(capsys, "report", "advice", "--results", results)
    gw = [r for r in advice["rows"] if r["code"] == "path-mtu"]
    assert len(gw) == 1 and gw[0]["runs"].count(",") == 1, gw  # both gateway runs, one row


def test_seed002_files_to_the_cheat_sheet_by_region(tmp_path: Path, capsys: Any) -> None:
    with profile_lab(tmp_path, "steady", ["server", "client"], "198.18.74.0/24") as (name, state):
        s = spec(
            tmp_path,
            "p10",
            f"""\
            campaign: p10
            hosts:
              big: {{kind: netns, lab: {name}, host: server}}
              it: {{kind: netns, lab: {name}, host: client}}
            tests:
              - {{name: p10, engine: iperf3, client: it, server: big,
                  params: {{duration: 3, parallel: 10}}}}
            repeats: 2
            """,
        )
        results, _ = run_and_ingest(capsys, tmp_path, s, state)
    # the author's files: the client's -J output (no server side), his two top-level keys
    files = tmp_path / "bucket"
    envs = [json.loads(gzip.decompress(p.read_bytes())) for p in Path(results).rglob("*.gz")]
    for n, (env, (itype, region)) in enumerate(
        zip(envs, [("t2.nano", "us-east-1"), ("m5.large", "eu-west-1")], strict=True)
    ):
        doc = {k: v for k, v in env["result"].items() if k != "server_output_json"}
        doc.update(instanceType=itype, region=region)
        f = files / "d=2018-04-10" / f"{itype}-{1523348026 + n}.json.gz"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(gzip.compress(json.dumps(doc).encode()))
    imported, catalog = str(tmp_path / "imported"), str(tmp_path / "icat")
    cli(capsys, "import", str(files), "--pattern", "seed002", "--results", imported)
    cli(capsys, "ingest", "--results", imported, "--catalog", catalog)
    sheet = cli_json(capsys, "cheatsheet", "--catalog", catalog, "--by", "region,instance_type")
    assert [(r["region"], r["instance_type"]) for r in sheet["rows"]] == [
        ("eu-west-1", "m5.large"),
        ("us-east-1", "t2.nano"),
    ]
    for r in sheet["rows"]:  # the lab's 300 Mbit/s host, read from the sender's side
        assert abs(r["p50"] * 1e9 / (300e6 * GOODPUT) - 1) < 0.1, r
        assert "sender side" in r["flag"]
    assert any("no receiver-side intervals" in n for n in sheet["notes"])


def paths_spec(tmp_path: Path, name: str, duration: int) -> str:
    """docs/seeds.md's paths.yaml: one flow between private addresses, one between public ones
    (through the lab's gateway)."""
    return spec(
        tmp_path,
        "paths",
        f"""\
        campaign: paths
        hosts:
          a: {{kind: netns, lab: {name}, host: a, labels: {{topology: private}}}}
          b: {{kind: netns, lab: {name}, host: b}}
          apub: {{kind: netns, lab: {name}, host: a, via: gateway, labels: {{topology: public}}}}
          bpub: {{kind: netns, lab: {name}, host: b, via: gateway}}
        tests:
          - {{name: private, engine: iperf3, client: a, server: b,
              params: {{duration: {duration}}}}}
          - {{name: public, engine: iperf3, client: apub, server: bpub,
              params: {{duration: {duration}}}}}
        """,
    )


def test_seed003_the_gateway_path_mtu_and_its_advice(
    gateway_lab: tuple[str, Path], tmp_path: Path, capsys: Any
) -> None:
    name, state = gateway_lab
    s = paths_spec(tmp_path, name, duration=2)
    doctor = cli(capsys, "doctor", s, "--state-dir", str(state), "--format", "json")
    assert "path-mtu" in doctor and "1500" in doctor and "9000" in doctor
    # issue 36: this lab's gateway forwards at any rate — said beside "use private addresses"
    [said] = [a for a in json.loads(doctor)["advice"]["rows"] if a["code"] == "path-mtu"]
    assert "gateway has no rate cap" in said["finding"], said
    results, catalog = run_and_ingest(capsys, tmp_path, s, state)
    advice = cli_json(capsys, "report", "advice", "--results", results)
    [gw] = [r for r in advice["rows"] if r["code"] == "path-mtu"]
    assert "1500" in gw["finding"] and "9000" in gw["finding"]
    assert "gateway has no rate cap" in gw["finding"], gw
    topology = cli_json(capsys, "report", "topology", "--catalog", catalog)
    assert {r["topology"] for r in topology["rows"]} == {"private", "public"}
    assert any(n.startswith("topology public: through a lab gateway; this lab's gateway has no "
                            "rate cap") for n in topology["notes"]), topology["notes"]  # fmt: skip


def test_seed004_r4_large_bursts_then_gives_its_baseline(tmp_path: Path, capsys: Any) -> None:
    # A busy spell of this VM can stall a 25-s series into noise (seen once in CI at four
    # workers): the analysis then says "erratic", honestly, with no verdict. A second lab then
    # (its bucket full again: a drained one would not burst), the first with a verdict counts.
    for attempt in ("first", "again"):
        where = tmp_path / attempt
        where.mkdir()
        with profile_lab(where, "r4", ["server", "r4-large"], "198.18.75.0/24") as (name, state):
            s = spec(
                where,
                "r4",
                f"""\
                campaign: r4-burst
                hosts:
                  big: {{kind: netns, lab: {name}, host: server}}
                  r4: {{kind: netns, lab: {name}, host: r4-large}}
                tests:
                  - {{name: burst, engine: iperf3, client: r4, server: big,
                      params: {{duration: 25, parallel: 2}}}}
                """,
            )
            _, catalog = run_and_ingest(capsys, where, s, state)
        groups = cli_json(capsys, "analyze", "--catalog", catalog)
        (row,) = groups["rows"]
        if row["credit_kind"] != "erratic":
            break
    assert row["credit_kind"] == "burst" and row["lab_scale"] == "lab ×0.05", row
    # seed 004: 0.75 Gbit/s baseline, ~2,700 credits, ~295 s at 10 Gbit/s (goodput ×0.956)
    assert abs(row["cloud_baseline_gbps"] / (0.75 * GOODPUT) - 1) < 0.05, row
    assert abs(row["cloud_credit_gbit"] / (2700 * GOODPUT) - 1) < 0.1, row
    # time at peak: what the bucket lasts at the peak the two streams reached (a loaded machine
    # reaches less than the shaper's 500 Mbit/s: the burst then lasts longer, as it would)
    drains = row["cloud_credit_gbit"] / (row["cloud_peak_gbps"] - row["cloud_baseline_gbps"])
    # (at_peak_s is where the burst segment ends, to 1 interval = 20 cloud s; the peak's ± ~10 %)
    assert abs(row["cloud_at_peak_s"] / drains - 1) < 0.2, row
    assert abs(row["cloud_at_peak_s"] / 295 - 1) < 0.3, row
    calc = cli_json(
        capsys, "credit", "calc", "--baseline", f"{row['cloud_baseline_gbps']:.3f}gbit",
        "--peak", f"{row['cloud_peak_gbps']:.3f}gbit",
        "--bucket", f"{row['cloud_credit_gbit']:.0f}gbit",
    )  # fmt: skip
    at_peak = next(r for r in calc["rows"] if r["quantity"].startswith("time at peak"))
    assert abs(at_peak["value"] / drains - 1) < 0.01, at_peak


def test_seed001_latency_per_topology_with_the_delay_line(tmp_path: Path, capsys: Any) -> None:
    hosts = ["a", "pg", "az", "region"]
    with profile_lab(tmp_path, "seed001", hosts, "198.18.76.0/24") as (name, state):
        s = spec(
            tmp_path,
            "topologies",
            f"""\
            campaign: seed001
            hosts:
              to-pg: {{kind: netns, lab: {name}, host: a, labels: {{topology: pg}}}}
              to-az: {{kind: netns, lab: {name}, host: a, labels: {{topology: az}}}}
              to-region: {{kind: netns, lab: {name}, host: a, labels: {{topology: region}}}}
              pg: {{kind: netns, lab: {name}, host: pg}}
              az: {{kind: netns, lab: {name}, host: az}}
              region: {{kind: netns, lab: {name}, host: region}}
            tests:
              - name: rr
                engine: latency
                params: {{duration: 2, size: 90}}
                client: to-pg
                server: pg
                include: [{{client: to-az, server: az}}, {{client: to-region, server: region}}]
            """,
        )
        _, catalog = run_and_ingest(capsys, tmp_path, s, state)
    rows = {
        r["topology"]: r
        for r in cli_json(capsys, "report", "topology", "--catalog", catalog)["rows"]
    }
    p50 = {t: rows[t]["rr_p50_us"] for t in ("pg", "az", "region")}
    # the profile adds 2 x 23 µs, 2 x 313 µs and 2 x 35 ms (± 0.2 ms jitter) to the lab's own
    assert p50["pg"] < p50["az"] < p50["region"], p50
    assert p50["az"] - p50["pg"] > 400, p50  # 580 µs more, less a busy machine's noise
    assert abs(p50["region"] / 70_000 - 1) < 0.02, p50


def test_seed003_the_capped_gateway_makes_public_slower(tmp_path: Path, capsys: Any) -> None:
    with profile_lab(
        tmp_path, "seed003", ["a", "b"], "198.18.77.0/24", gateway="198.18.177.0/24"
    ) as (name, state):
        s = paths_spec(tmp_path, name, duration=3)
        results, catalog = run_and_ingest(capsys, tmp_path, s, state)
    rows = {
        r["topology"]: r
        for r in cli_json(capsys, "report", "topology", "--catalog", catalog)["rows"]
    }
    # one flow: private ≤ the 1 Gbit/s per-flow cap at MTU 9001, public ≤ the 500 Mbit/s gateway
    # (private is 0.993 Gbit/s on a quiet machine; a busy one may not push jumbo frames that fast)
    public, private = rows["public"]["throughput_gbps"], rows["private"]["throughput_gbps"]
    assert 0.85 < public / (0.5 * GOODPUT) < 1.05, rows
    assert private > 1.2 * public, rows
    advice = cli_json(capsys, "report", "advice", "--results", results)
    [gw] = [r for r in advice["rows"] if r["code"] == "path-mtu"]
    assert "rate cap" not in gw["finding"]  # a capped gateway: the comparison stands
