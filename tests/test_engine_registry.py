"""The engine registry is the one place an engine is declared: the spec's test kinds, the
preflight tool list, the package list, the catalog parsers, the progress/advice summary and
which reports read a result are all derived from it.

Proved with a toy engine that exists only in the tests (tests/toyengine.py): its module plus one
``register_engine`` call (made in a fresh interpreter, before the spec is imported) is all it
takes for every one of those places to know it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netfleet.engines import ENGINES, measuring, summary
from netfleet.spec.models import TEST_KINDS

REPO = Path(__file__).parents[1]

#: run in a fresh interpreter: the toy engine is registered first (the spec's test kinds are
#: built when netfleet.spec is first imported), then every place that knows engines is asked
PROBE = """
import asyncio, json, os, subprocess, sys
from pathlib import Path

from netfleet.engines import register_engine
from tests.toyengine import Toy, install_tool

register_engine(Toy())  # the one registry line

tmp = Path(sys.argv[1])
out = {}

# installed: the cloud user-data and --install know its package
from netfleet.cloud.bootstrap.userdata import install_commands
from netfleet.hosts.packages import packages_for
out["apt"] = [c[-1] for c in install_commands("debian-12")[1:]]
out["dnf"] = install_commands("al2023")[0]
out["packages"] = packages_for(["toyperf"], "apt-get")

# the spec and plan: its test kind, params, matrix, schema
from netfleet.plan import expand
from netfleet.spec.load import spec_schema
from netfleet.spec.models import TEST_KINDS, CampaignSpec
spec = CampaignSpec.model_validate({
    "campaign": "c",
    "hosts": {"a": {"kind": "local"}, "b": {"kind": "local"}},
    "tests": [{"name": "t", "engine": "toy", "client": "a", "server": "b",
               "matrix": {"parallel": [1, 2]}}],
})
runs = expand(spec)
out["kind"] = TEST_KINDS["toy"].__name__
out["params"] = [r.params.model_dump() for r in runs]
out["schema_has_toy"] = "ToyTest" in json.dumps(spec_schema())
try:
    CampaignSpec.model_validate({"campaign": "c", "hosts": {"a": {"kind": "local"}},
        "tests": [{"name": "t", "engine": "toy", "client": "a", "server": "a",
                   "params": {"parallel": 99}}]})
    out["refused"] = None
except Exception as exc:
    out["refused"] = str(exc)

# preflighted: without its tool, the error names it and its package; with it, its version
from netfleet.hosts.local import LocalHost
from netfleet.runner.preflight import preflight
from netfleet.runner.tools import required_tools
out["tools"] = required_tools(runs)
hosts = {h: LocalHost(name=h, address="127.0.0.1") for h in ("a", "b")}
try:
    asyncio.run(preflight(spec, hosts, runs))
    out["without_tool"] = None
except Exception as exc:
    out["without_tool"] = f"{exc} {getattr(exc, 'hint', '')}"
bin_dir = tmp / "bin"
bin_dir.mkdir()
install_tool(bin_dir)
os.environ["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
ready = asyncio.run(preflight(spec, hosts, runs))
out["ready"] = {f"{h}/{e}": info.version for (h, e), info in ready.engines.items()}

# doctored: doctor lists its tool; a host without it is told to install its package
from netfleet.advice import advise_doctor
from netfleet.doctor.checks import host_report
out["doctor"] = asyncio.run(host_report(hosts["a"]))["tools"].get("toyperf")
bare = [{"host": "x", "cpus": 1, "tools": {"iperf3": "3.12"}, "capabilities": {}}]
out["doctor_advice"] = [(a.message, a.fix) for a in advise_doctor(bare, [])
                        if a.code == "missing-tools"]

# imported: the tool's own output files
files = tmp / "files"
files.mkdir()
for n in (1, 2):
    for seconds in (5, 6):
        argv = ["toyperf", "-c", "198.18.77.2", "-P", str(n), "-t", str(seconds)]
        text = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        (files / f"toy-p{n}-{seconds}s.txt").write_text(text)
from netfleet.store import ResultsRoot
from netfleet.store.imports import import_files
root = ResultsRoot(tmp / "results")
report = import_files([str(files)], root, labels=["instance_type=toy.large"])
out["imported"], out["bad"] = len(report.imported), report.bad
docs = [root.read(p) for p in root.files()]
out["engines"] = sorted({d["engine"]["name"] for d in docs})
out["parallel"] = sorted(d["params"]["parallel"] for d in docs)

# ingested and reported: the catalog's rows, the cheat sheet
from netfleet.catalog import ingest
from netfleet.catalog.cheatsheet import cheatsheet_data
from netfleet.report.cheatsheet import cheatsheet_table
ingest(root, tmp / "catalog")
sheet = cheatsheet_table(cheatsheet_data(tmp / "catalog", group_by=("parallel",)))
out["sheet_columns"] = sheet.columns
out["sheet"] = sheet.rows

# advised on, and the advice reported
from netfleet.advice import advise
from netfleet.report.advice import advice_table
items = advise(docs)
out["advice"] = {a.code: a.evidence for a in items}
out["advice_table"] = advice_table(items).rows
print(json.dumps(out, default=str))
"""


def test_a_toy_engine_plugs_in_everywhere(tmp_path: Path) -> None:
    """tests/toyengine.py, registered at run time with ``register_engine``, is installed,
    preflighted, doctored, imported, ingested, advised on and reported — no other file knows
    it."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    # installed
    assert "toyperf-pkg" in got["apt"] and "toyperf" in got["dnf"]
    assert got["packages"] == [["toyperf-pkg"], []]
    # the spec and plan
    assert got["kind"] == "ToyTest" and got["schema_has_toy"]
    assert [p["parallel"] for p in got["params"]] == [1, 2]
    assert got["refused"] and "parallel" in got["refused"]
    # preflighted
    assert "toyperf" in got["tools"]["a"] and "toyperf" not in got["tools"]["b"]  # no server
    assert got["without_tool"] and "toyperf" in got["without_tool"]
    assert "toyperf-pkg" in got["without_tool"]
    assert got["ready"] == {"a/toy": "1.0"}
    # doctored
    assert got["doctor"] == "toyperf 1.0 (a toy)"
    [(message, fix)] = got["doctor_advice"]
    assert "toyperf" in message and "toyperf-pkg" in fix
    # imported
    assert got["imported"] == 4 and not got["bad"]
    assert got["engines"] == ["toy"] and got["parallel"] == [1, 1, 2, 2]
    # ingested and reported: 0.1 Gbit/s per stream (the toy link's flow cap)
    rows = {row[0]: row for row in got["sheet"]}
    assert set(rows) == {1, 2}
    mean = got["sheet_columns"].index("avg")
    assert rows[1][mean] == pytest.approx(0.1) and rows[2][mean] == pytest.approx(0.2)
    # advised on, naming the stream count
    cap = got["advice"]["per-flow-cap"]
    assert cap["streams"] == 2 and cap["ratio"] == pytest.approx(2.0)
    assert any("per-flow-cap" in map(str, row) for row in got["advice_table"])


def test_the_spec_union_is_the_registry() -> None:
    assert list(TEST_KINDS) == list(ENGINES)
    for name, kind in TEST_KINDS.items():
        assert kind.model_fields["params"].annotation is ENGINES[name].params_model
        assert kind.__doc__ == ENGINES[name].title


def test_summaries_come_from_the_engine() -> None:
    iperf3 = {"end": {"sum_received": {"bits_per_second": 2.5e8}}}
    found = summary("iperf3", iperf3)
    assert found is not None and found.received_bps == 2.5e8 and "Mbit/s" in found.text
    wrapped = {"chosen": "iperf2", "result": {"summary": {"receiver_bps": 1e9}}}
    found = summary("throughput", wrapped)
    assert found is not None and found.received_bps == 1e9
    latency = summary("latency", {"summary": {"p50_us": 41.2, "p99_us": 80.0}})
    assert latency is not None and latency.received_bps is None and "p50 41" in latency.text
    rr = summary("latency", {"summary": {"p50_us": 70.0, "transactions_per_s": 14005.2}})
    assert rr is not None and rr.text.endswith("14,005 ops/s")
    assert summary("no-such-engine", {}) is None
    assert set(measuring("throughput")) == {"iperf3", "iperf2", "iperf3-multi", "throughput"}
    assert set(measuring("latency")) == {"latency", "ping", "irtt", "latency-under-load"}
