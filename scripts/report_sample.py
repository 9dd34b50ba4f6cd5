"""A small real lab study for the HTML report: a lab with a steady pair (same shaper), a host
5 % slower, a credit (burst) host and an asymmetric host; one campaign of short iperf3 runs,
latency and ping; ingested into a catalog. Used by tests/test_report_html.py and for the
screenshots in docs/report/.

    sudo .venv/bin/python scripts/report_sample.py OUTDIR      # ≈ 2 minutes
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import textwrap
from pathlib import Path

LAB_BODY = """\
description: netfleet report sample (steady pair, 5 % slower twin, credit host, asymmetric host)
subnet: 198.18.213.0/24
mtu: 1500
hosts:
  server:
    labels: {instance_type: big-server, role: server}
  a:
    labels: {instance_type: lab-steady-200m, shaper: s200, price_per_hour: "0.085",
             advertised: 200mbit, topology: same-subnet}
    out: {rate: 200mbit}
    in: {rate: 200mbit}
  b:
    labels: {instance_type: lab-steady-200m, shaper: s200, price_per_hour: "0.085",
             advertised: 200mbit, topology: same-subnet}
    out: {rate: 200mbit}
    in: {rate: 200mbit}
  c:
    labels: {instance_type: lab-steady-190m, shaper: s190, price_per_hour: "0.080",
             advertised: 190mbit}
    out: {rate: 190mbit}
    in: {rate: 190mbit}
  burst:
    labels: {instance_type: lab-burst-40m-300m, price_per_hour: "0.021", advertised: 300mbit}
    out: {rate: 40mbit, peak: 300mbit, bucket: 1040mbit}
    in: {rate: 40mbit, peak: 300mbit, bucket: 1040mbit}
  asym:
    labels: {instance_type: lab-asym-300m-100m, price_per_hour: "0.04",
             advertised_out: 300mbit, advertised_in: 100mbit}
    out: {rate: 300mbit}
    in: {rate: 100mbit}
"""


def spec_text(lab_name: str, repeats: int = 4, seconds: int = 7, concurrency: int = 1) -> str:
    """The campaign; with ``concurrency`` > 1, that many runs at once, sharing the (unshaped)
    server: each client's own shaper still sets its rate (the test suite's faster sample)."""
    return textwrap.dedent(f"""\
    campaign: report-sample
    description: report sample - shaped lab hosts, short runs
    repeats: {repeats}
    concurrency: {concurrency}
    allow_host_overlap: {"[server]" if concurrency > 1 else "false"}
    hosts:
      server: {{kind: netns, lab: {lab_name}, host: server}}
      a: {{kind: netns, lab: {lab_name}, host: a}}
      b: {{kind: netns, lab: {lab_name}, host: b}}
      c: {{kind: netns, lab: {lab_name}, host: c}}
      burst: {{kind: netns, lab: {lab_name}, host: burst}}
      asym: {{kind: netns, lab: {lab_name}, host: asym}}
    tests:
      - name: tput
        engine: iperf3
        server: server
        params: {{duration: {seconds}, omit: 1}}
        matrix:
          client: [a, b, c]
      - name: burst
        engine: iperf3
        server: server
        client: burst
        params: {{duration: 10}}
      - name: asym
        engine: iperf3
        server: server
        client: asym
        params: {{duration: {seconds - 1}}}
        matrix:
          direction: [out, in]
      - name: rr
        engine: latency
        server: server
        client: a
        params: {{duration: 1}}
      - name: icmp
        engine: ping
        server: server
        client: a
        params: {{count: 20, interval: 0.02, size: 1400}}
    """)


def make_sample(
    out: Path, repeats: int = 4, seconds: int = 7, concurrency: int = 1
) -> tuple[Path, Path]:
    """Lab up → campaign → ingest → lab down. Returns (results dir, catalog dir)."""
    from netfleet import lab
    from netfleet.catalog import ingest
    from netfleet.runner import run_campaign
    from netfleet.spec import load_spec
    from netfleet.store import open_root

    out.mkdir(parents=True, exist_ok=True)
    name = "rpt" + secrets.token_hex(3)
    state = out / "labstate"
    lab_file = out / f"{name}.yaml"
    lab_file.write_text(f"name: {name}\n" + LAB_BODY)
    spec_file = out / "campaign.yaml"
    spec_file.write_text(spec_text(name, repeats, seconds, concurrency))
    results, catalog = out / "results", out / "catalog"
    lab.up(lab.load_lab(lab_file), state_dir=state)
    try:
        asyncio.run(run_campaign(load_spec(spec_file), open_root(results), None, state))
    finally:
        lab.down(name, state_dir=state)
    ingest(open_root(results), catalog)
    return results, catalog


if __name__ == "__main__":
    args = sys.argv[1:]
    r, c = make_sample(Path(args[0]), *(int(a) for a in args[1:3]))
    print(f"results: {r}\ncatalog: {c}")
