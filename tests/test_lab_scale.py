"""Issue 9 case 8: the demo's cheat sheet listed `lab-steady-6g` at 0.287 Gbit/s with no word that
the lab runs at ×0.05 of the cloud figures its labels name. A scaled lab now records its scale in
its state and on its hosts' labels (so on every run), and the cheat sheet and the topology table
say so beside the numbers, in every format."""

from __future__ import annotations

import json
from pathlib import Path

from netfleet.catalog import ingest
from netfleet.lab import load_lab
from netfleet.lab.topology import plan
from netfleet.report.cheatsheet import cheatsheet
from netfleet.report.output import render
from netfleet.report.topology import topology_table
from netfleet.store import ResultsRoot
from tests.test_catalog import make_envelope


def test_a_scaled_lab_puts_its_scale_in_its_state_and_on_every_host() -> None:
    state = plan(load_lab("demo"))
    assert state.scale is not None and state.scale.rate == 0.05
    for host in state.hosts.values():
        assert host.labels["lab_scale"] == 0.05 and host.labels["lab_time_scale"] == 0.05
    assert host.labels["instance_type"]  # the lab file's own labels are kept
    # a lab at the cloud's own figures adds nothing
    unscaled = load_lab("demo").model_copy(update={"scale": None})
    assert all("lab_scale" not in h.labels for h in plan(unscaled).hosts.values())


def test_the_cheat_sheet_and_topology_say_the_lab_scale_beside_the_numbers(
    tmp_path: Path,
) -> None:
    root = ResultsRoot(tmp_path / "raw")
    steady = {"instance_type": "lab-steady-6g", "topology": "lab", "lab_scale": 0.05,
              "lab_time_scale": 0.05}  # fmt: skip
    root.write(make_envelope("tcp_1stream", "lab-1", labels=steady))
    root.write(make_envelope("tcp_p2", "cloud-1", labels={"instance_type": "m5.large"}))
    ingest(root, tmp_path / "cat")

    sheet = cheatsheet(tmp_path / "cat", group_by=("instance_type",))
    flags = {r["instance_type"]: r["flag"] for r in sheet.records()}
    assert flags["lab-steady-6g"] == "lab ×0.05" and flags["m5.large"] is None
    expected = "lab-steady-6g: lab at ×0.05 of the cloud figures its name gives"
    assert sum(expected in n for n in sheet.notes) == 1
    assert not any("m5.large" in n for n in sheet.notes)
    doc = json.loads(render(sheet, "json"))
    assert doc["notes"] == sheet.notes  # JSON carries the table's notes word for word
    assert any(expected in line for line in render(sheet, "markdown").splitlines())

    topo = topology_table(tmp_path / "cat", by="instance_type")
    assert any("instance_type lab-steady-6g: lab at ×0.05" in n for n in topo.notes)
    assert not any("m5.large: lab" in n for n in topo.notes)
