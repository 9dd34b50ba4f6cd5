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


def test_scale_cloud_shows_a_scaled_lab_as_the_cloud_figures_and_a_goodput_basis_says_so(
    tmp_path: Path,
) -> None:
    """Issue 36: the summary spoke cloud units while the cheat sheet and the topology table
    spoke the lab's; ``scale="cloud"`` (``--scale cloud``) shows a scaled lab's rates as the
    cloud figures they stand for, in every format, flagged; a profile built from a seed's
    goodput (seed 000's Fargate tiers: label lab_rate_basis) says its figures land 4.4 % under
    the seed's."""
    from netfleet import api

    root = ResultsRoot(tmp_path / "raw")
    fargate = {"instance_type": "f256-512m", "topology": "lab", "lab_scale": 0.2,
               "lab_time_scale": 1, "lab_rate_basis": "goodput"}  # fmt: skip
    root.write(make_envelope("tcp_1stream", "lab-1", labels=fargate))
    root.write(make_envelope("tcp_p2", "cloud-1", labels={"instance_type": "m5.large"}))
    ingest(root, tmp_path / "cat")
    by = ("instance_type",)
    lab_sheet = {r["instance_type"]: r for r in cheatsheet(tmp_path / "cat", group_by=by).records()}
    sheet = api.cheatsheet(catalog=tmp_path / "cat", by="instance_type", scale="cloud")
    cloud = {r["instance_type"]: r for r in sheet.records()}
    for stat in ("min", "avg", "p50", "max"):
        assert cloud["f256-512m"][stat] == lab_sheet["f256-512m"][stat] / 0.2
        assert cloud["m5.large"][stat] == lab_sheet["m5.large"][stat]  # not a lab: unchanged
    assert cloud["f256-512m"]["flag"] == "cloud; lab ×0.2" and cloud["m5.large"]["flag"] is None
    assert any("shown as the cloud figures they stand for, the lab's ÷ 0.2" in n
               for n in sheet.notes)  # fmt: skip
    basis = [n for n in sheet.notes if "seed's goodput used as shaper (wire) rates" in n]
    assert len(basis) == 1 and "× 0.956 at MTU 1500 (4.4 % under)" in basis[0], sheet.notes
    assert "--scale cloud" in " ".join(cheatsheet(tmp_path / "cat", group_by=by).notes)
    for fmt in ("json", "csv", "markdown"):
        assert str(round(cloud["f256-512m"]["p50"], 2))[:4] in render(sheet, fmt)

    topo = api.report_topology(catalog=tmp_path / "cat", by="instance_type", scale="cloud")
    lab_topo = api.report_topology(catalog=tmp_path / "cat", by="instance_type")
    gbps = {r["instance_type"]: r["throughput_gbps"] for r in topo.records()}
    lab_gbps = {r["instance_type"]: r["throughput_gbps"] for r in lab_topo.records()}
    assert gbps["f256-512m"] == lab_gbps["f256-512m"] / 0.2
    assert gbps["m5.large"] == lab_gbps["m5.large"]
    assert any("instance_type f256-512m: lab at ×0.2" in n and "÷ 0.2" in n for n in topo.notes)


def test_the_html_report_gives_a_scaled_lab_in_cloud_figures_in_every_section(
    tmp_path: Path,
) -> None:
    """Issue 36: the report's summary gave cloud figures, its cheat sheet and out-vs-in the
    lab's. Now the cheat sheet gives the cloud figures (flagged 'cloud'), out-vs-in has the
    cloud columns beside the lab's, and the summary says a goodput-built profile lands under
    its seed."""
    from netfleet.report.document import Bullets, Table
    from netfleet.report.study_report import build_document

    root = ResultsRoot(tmp_path / "raw")
    fargate = {"instance_type": "f256-512m", "lab_scale": 0.2, "lab_time_scale": 1,
               "lab_rate_basis": "goodput", "advertised": "100gbit"}  # fmt: skip
    root.write(make_envelope("tcp_1stream", "lab-1", labels=fargate))
    root.write(make_envelope("tcp_p2", "cloud-1", labels={"instance_type": "m5.large"}))
    ingest(root, tmp_path / "cat")
    lab = {r["instance_type"]: r for r in cheatsheet(tmp_path / "cat").records()}
    doc = build_document(tmp_path / "cat")

    def table(name: str) -> Table:
        section = doc.section(name)
        assert section is not None
        (found,) = [b for b in section.blocks if isinstance(b, Table)]
        return found

    sheet = table("cheatsheet")
    rows = {r["instance_type"]: r for r in sheet.data.records()}
    assert rows["f256-512m"]["p50"] == lab["f256-512m"]["p50"] / 0.2  # both in Gbit/s
    assert rows["m5.large"]["p50"] == lab["m5.large"]["p50"]
    it = sheet.data.columns.index("instance_type")
    assert {sheet.data.rows[n][it]: f for n, f in sheet.flags.items()} == {
        "f256-512m": "cloud; lab ×0.2"
    }
    inout = {r["instance_type"]: r for r in table("inout").data.records()}
    assert inout["f256-512m"]["cloud_out_mbps"] == inout["f256-512m"]["out_mbps"] / 0.2
    assert inout["m5.large"]["cloud_out_mbps"] is None
    # the advertised figure is the cloud's: measured ÷ advertised in cloud figures
    (adv,) = table("advertised").data.records()
    assert adv["sustained_mbps"] == inout["f256-512m"]["cloud_out_mbps"]
    assert adv["sustained_ratio"] == adv["sustained_mbps"] / 100e3
    assert adv["lab_scale"] == "lab ×0.2 (time ×1)"
    summary = doc.section("summary")
    assert summary is not None
    heads = [i for b in summary.blocks if isinstance(b, Bullets) for i in b.items]
    assert any("f256-512m" in h and "4.4 % under" in h for h in heads), heads


def test_every_reader_of_a_lab_scale_label_gives_the_engines_answer() -> None:
    """One rule reads ``lab_scale`` / ``lab_time_scale`` (:func:`lab_scale`): the report's
    scale, the advice's rate scale, the analysis's time scale and the cheat sheet's group scale
    all give its answer — text as a number, a boolean or several scales unreadable, the time
    scale the rate's when it is unreadable."""
    from netfleet.analysis.analyze import _lab_time_scale
    from netfleet.engines.burstable import lab_rate_scale, lab_scale
    from netfleet.report.cheatsheet import _one
    from netfleet.report.labscale import scale_of

    cases = [
        ({"lab_scale": "0.05", "lab_time_scale": "0.1"}, (0.05, 0.1)),
        ({"lab_scale": 0.05, "lab_time_scale": True}, (0.05, 0.05)),
        ({"lab_scale": True}, None),
        ({"lab_scale": "0.05,0.1"}, None),
        ({"lab_scale": -2}, None),
        ({"lab_scale": 1, "lab_time_scale": 0.5}, (1.0, 0.5)),
        ({"lab_scale": 1}, None),
        ({}, None),
    ]
    for labels, want in cases:
        assert lab_scale(labels) == want, labels
        found = scale_of(labels)
        assert (None if found is None else (found.rate, found.time)) == want, labels
        rate = None if want is None or want[0] == 1 else want[0]
        assert lab_rate_scale(labels) == rate, labels
        assert _lab_time_scale(labels) == (None if want is None or want[1] == 1 else want[1])
        if "lab_scale" in labels:
            text = str(labels["lab_scale"])
            assert _one(text) == lab_rate_scale({"lab_scale": text}), labels
