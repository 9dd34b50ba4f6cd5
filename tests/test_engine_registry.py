"""The engine registry is the one place an engine is declared: the spec's test kinds, the
preflight tool list, the package list, the catalog parsers, the progress/advice summary and
which reports read a result are all derived from it.

Proved with a toy engine that exists only in this test: its module plus one registry line (made
in a fresh interpreter, before anything else is imported) is all it takes for every one of
those places to know it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from netfleet.engines import ENGINES, measuring, summary
from netfleet.spec.models import TEST_KINDS

TOY_ENGINE = """
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field

from netfleet.engines.contract import Summary
from netfleet.engines.params.base import EngineParams


class ToyParams(EngineParams):
    loudness: int = Field(3, ge=1, le=11)


class Toy:
    name = "toy"
    title: ClassVar[str] = "A toy engine."
    params_model: ClassVar[type[ToyParams]] = ToyParams
    measures: ClassVar[str] = "throughput"
    needs_server = True
    tools = ("toytool",)
    packages: ClassVar[dict[str, dict[str, str]]] = {"toytool": {"apt-get": "toy-pkg"}}

    @staticmethod
    def table_rows(run_id, result, params, outputs):
        return {"ends": [{"run_id": run_id, "side": "client", "bits": result["bits"]}]}

    @staticmethod
    def summary(result):
        return Summary(float(result["bits"]), f"{result['bits']} bit/s of toy")
"""

PROBE = """
import json, sys
import netfleet.engines as registry
import toy_engine
registry.ENGINES["toy"] = toy_engine.Toy()  # the one registry line

from netfleet.catalog.rows import TABLE_PARSERS
from netfleet.hosts.packages import package_table
from netfleet.plan import expand
from netfleet.spec.load import spec_schema
from netfleet.spec.models import TEST_KINDS, CampaignSpec
from netfleet.runner.tools import required_tools

spec = CampaignSpec.model_validate({
    "campaign": "c",
    "hosts": {"a": {"kind": "local"}, "b": {"kind": "local"}},
    "tests": [{"name": "t", "engine": "toy", "client": "a", "server": "b",
               "params": {"loudness": 11}, "matrix": {"loudness": [1, 2]}}],
})
runs = expand(spec)
try:
    CampaignSpec.model_validate({"campaign": "c", "hosts": {"a": {"kind": "local"}},
        "tests": [{"name": "t", "engine": "toy", "client": "a", "server": "a",
                   "params": {"loudness": 12}}]})
    refused = None
except Exception as exc:
    refused = str(exc)
print(json.dumps({
    "kind": TEST_KINDS["toy"].__name__,
    "params": [r.params.model_dump() for r in runs],
    "refused": refused,
    "schema_has_toy": "ToyTest" in json.dumps(spec_schema()),
    "tools": required_tools(runs),
    "package": package_table()["toytool"],
    "rows": TABLE_PARSERS["toy"]("r1", {"bits": 5}, {}, {}),
    "summary": registry.summary("toy", {"bits": 7}).text,
    "throughput": registry.measuring("throughput"),
}))
"""


def test_a_new_engine_is_one_module_and_one_registry_line(tmp_path: Path) -> None:
    (tmp_path / "toy_engine.py").write_text(TOY_ENGINE)
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["kind"] == "ToyTest"
    assert [p["loudness"] for p in got["params"]] == [1, 2]  # the matrix reaches its params
    assert got["refused"] and "loudness" in got["refused"]  # its own validation applies
    assert got["schema_has_toy"]
    assert got["tools"]["a"][-1] == "toytool" and "toytool" in got["tools"]["b"]
    assert got["package"] == {"apt-get": "toy-pkg"}
    assert got["rows"] == {"ends": [{"run_id": "r1", "side": "client", "bits": 5}]}
    assert got["summary"] == "7 bit/s of toy"
    assert "toy" in got["throughput"]


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
    assert summary("no-such-engine", {}) is None
    assert set(measuring("throughput")) == {"iperf3", "iperf2", "iperf3-multi", "throughput"}
    assert set(measuring("latency")) == {"latency", "ping", "irtt"}
