"""A worker's task checks its plain iperf3 documents' interval sums and makes their rows at
once (:class:`netfleet.catalog.typedsums.TaskSums`, issue 26): the reads and every table are
those the per-file path gives, over the captured outputs and copies made to hit each edge —
omitted intervals, the 3.12 repeated sum, ``sum_bidir_reverse``, ints beyond int64, missing
fields, a long interval, a gap, a rate no link carries, an ``ends`` int beyond int64, a file
twice; a task's ``runs`` and ``ends`` rows made as columns are the rows' own."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from netfleet.catalog import onepass, readtasks
from netfleet.catalog.sourcelist import Options, listed

FIX = Path(__file__).parent / "fixtures"
PLAIN = sorted(
    p
    for p in [*(FIX / "import").glob("*.json"), *(FIX / "public").glob("*.json")]
    if p.name != "MANIFEST.json" and "stream" not in p.name
)


def _base() -> dict[str, Any]:
    """A captured client's document with six intervals (its first one's numbers, in turn)."""
    doc = json.loads((FIX / "import" / "v3_18_tcp.client.json").read_bytes())
    first = doc["intervals"][0]
    secs = first["sum"]["seconds"]
    doc["intervals"] = [
        dict(first, sum=dict(first["sum"], start=n * secs, end=(n + 1) * secs)) for n in range(6)
    ]
    return doc


BASE = _base()


def _sums(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [iv["sum"] for iv in doc["intervals"]]


def _edges() -> dict[str, dict[str, Any]]:
    """Copies of a client's document, each changed to hit one edge."""
    out: dict[str, dict[str, Any]] = {}

    def edge(name: str) -> dict[str, Any]:
        out[name] = copy.deepcopy(BASE)
        return out[name]

    edge("plain")
    doc = edge("omitted")
    _sums(doc)[0]["omitted"] = True
    doc = edge("repeat")  # 3.12 repeats the last interval when the other end vanishes
    doc["intervals"].append(copy.deepcopy(doc["intervals"][-1]))
    doc = edge("repeat_zero")  # a zero-length interval twice: checked clean, the repeat dropped
    last = _sums(doc)[-1]
    zero = dict(last, start=last["end"], seconds=0.0, bytes=0, bits_per_second=0.0)
    doc["intervals"] += [{"sum": dict(zero)}, {"sum": dict(zero)}]
    doc = edge("bidir")
    for iv in doc["intervals"]:
        iv["sum_bidir_reverse"] = dict(iv["sum"], sender=not iv["sum"].get("sender"))
    doc = edge("no_sum")
    doc["intervals"][1] = {"streams": []}
    doc = edge("empty_sum")
    doc["intervals"][1]["sum"] = {}
    doc = edge("big_int")
    _sums(doc)[0]["retransmits"] = 2**64
    doc = edge("big_end")  # an ``ends`` int beyond int64 (as the row path: NULL)
    doc["end"]["sum_sent"]["bytes"] = 2**64
    doc = edge("no_seconds")
    del _sums(doc)[1]["seconds"]
    doc = edge("no_start_no_rate")
    del _sums(doc)[1]["start"], _sums(doc)[1]["bits_per_second"]
    doc = edge("some_senders")
    for n, total in enumerate(_sums(doc)):
        if n % 2:
            total.pop("sender", None)
    doc = edge("no_senders")
    for total in _sums(doc):
        total.pop("sender", None)
    doc = edge("reverse_some_senders")  # -R: the client receives unless a sum says
    doc["start"]["test_start"]["reverse"] = 1
    for n, total in enumerate(_sums(doc)):
        if n % 2:
            total.pop("sender", None)
    server = out["server_no_senders"] = json.loads(
        (FIX / "import" / "v3_18_tcp.server.json").read_bytes()
    )  # a server's own file: its sums filed under the server, which receives
    for total in _sums(server):
        total.pop("sender", None)
    doc = edge("long")
    total = _sums(doc)[1]
    total["seconds"] *= 3
    total["end"] = total["start"] + total["seconds"]
    doc = edge("gap")
    _sums(doc)[2]["start"] += 0.5
    doc = edge("rate")
    _sums(doc)[1]["bits_per_second"] *= 1.1
    doc = edge("implausible")
    _sums(doc)[1]["bits_per_second"] = 1e300
    doc = edge("too_fast")  # its numbers agree, but no link carries the rate
    for total in _sums(doc):
        total["bits_per_second"] = 2e13
        total["bytes"] = round(2e13 * total["seconds"] / 8)
    doc = edge("server_text")  # a text server's output: the engine's rows, flags checked
    doc["server_output_text"] = (FIX / "import" / "v3_18_tcp.server.json").read_text()[:200]
    _sums(doc)[2]["start"] += 0.5
    doc = edge("no_intervals")
    doc["intervals"] = []
    doc = edge("one_interval")
    doc["intervals"] = doc["intervals"][:1]
    doc = edge("server_json")  # a client's document with the server's own
    doc["server_output_json"] = json.loads((FIX / "import" / "v3_18_tcp.server.json").read_bytes())
    return out


def _by_file_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file read on its own (its checks and sums per file: the path before tasks)."""
    alone = onepass.read_local

    def read_local(path: str, follow: bool, opts: Options, known: Any, sums: Any, *_: Any) -> Any:
        return alone(path, follow, opts, known, sums)

    monkeypatch.setattr(onepass, "read_local", read_local)


def _task(folder: Path) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    items = list(listed([str(folder)], False))
    reads, tables = readtasks.read_task(items, Options("camp", {"cloud": "lab"}, None), False)
    rows = [{k: v for k, v in r.row.items() if k != "checked_ns"} for r in reads]
    order = {"runs": ["run_id"], "ends": ["run_id", "side"]}
    out = {}
    for name, table in tables.items():
        keys = order.get(name, ["run_id", "side", "idx", "role"])
        if name in order or name == "intervals":
            table = table.sort_by([(k, "ascending") for k in keys])
        out[name] = table.to_pylist()
    return rows, out


def _write(folder: Path, docs: dict[str, Any]) -> None:
    folder.mkdir()
    for name, doc in docs.items():
        (folder / f"{name}.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("split", [False, True])
def test_a_task_s_sums_are_the_per_file_path_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: bool
) -> None:
    """Each edge in one task with the others (``split``: each edge in a task with only the
    plain document, so that one odd file does not decide the others' way)."""
    edges = _edges()
    groups = (
        [{"plain": edges["plain"], name: doc} for name, doc in edges.items()] if split else [edges]
    )
    flagged: set[str] = set()
    for n, docs in enumerate(groups):
        folder = tmp_path / f"t{n}"
        _write(folder, {**docs, "twice": docs["plain"]})  # the same bytes twice: one run
        got = _task(folder)
        with monkeypatch.context() as m:
            _by_file_path(m)
            want = _task(folder)
        assert got == want
        states = {Path(r["source"]).stem: r["state"] for r in got[0]}
        assert states["plain"] == "ok"
        assert states.get("implausible", "bad") == states.get("too_fast", "bad") == "bad"
        flagged |= {
            Path(r["source"]).stem for r in got[0] if r["state"] == "ok" and json.loads(r["flags"])
        }
    assert flagged >= {"long", "gap", "rate", "repeat", "no_sum", "server_text"}
    assert not flagged & {"plain", "repeat_zero", "bidir", "some_senders", "big_int"}


def test_the_captured_outputs_read_in_one_task_are_the_per_file_path_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every captured and public iperf3 ``-J`` output (both sides, TCP, UDP, -O, -R, errors)."""
    _write(tmp_path / "src", {p.name: json.loads(p.read_bytes()) for p in PLAIN})
    got = _task(tmp_path / "src")
    _by_file_path(monkeypatch)
    assert got == _task(tmp_path / "src")
    assert got[1]["intervals"] and all(r["state"] == "ok" for r in got[0])


def test_an_imported_run_row_is_run_row_s() -> None:
    """The ``runs`` row made for an imported document's envelope without looking up what every
    such envelope holds the same is :func:`run_row`'s, over every captured and public output
    and the edges above; an envelope with state, facts or other params is run_row's own."""
    from netfleet.catalog.onepass import _direct_envelope
    from netfleet.catalog.runrow import imported_run_row, run_row
    from netfleet.store.import_iperf3 import checked_shape, iperf3_fields

    edges = [d for name, d in _edges().items() if name not in ("implausible", "too_fast")]
    docs = [json.loads(p.read_bytes()) for p in PLAIN] + edges
    for n, doc in enumerate(docs):
        run_id, fields = iperf3_fields(
            Path(f"/x/{n}.json"), b"{}", checked_shape(doc), labels={"cloud": "lab"},
            found=["cloud"], epoch_label=None, side="auto", mtime=1.5e9, digest="0" * 64,
            keep_bytes=False,
        )  # fmt: skip
        envelope = _direct_envelope(run_id, "camp", fields)
        assert imported_run_row(envelope, "src") == run_row(envelope, "src")
        for odd in (
            {"state": {"client": {"mtu": 9001}, "rules_as_of": "2026-01-01"}},
            {"client": {**envelope["client"], "facts": {"mtu": 1500, "cpus": 4}}},
            {"params": {**envelope["params"], "interval": 2, "bidir": True}},
        ):
            changed = {**envelope, **odd}
            assert imported_run_row(changed, "src") == run_row(changed, "src")


def test_a_file_is_read_whole_by_its_descriptor(tmp_path: Path) -> None:
    """``read_checked`` reads a file's bytes by its descriptor: every byte of a file of any
    size, and a source that gives its bytes a part at a time (a pipe: what a file grown since
    its stat looks like) read on to the most asked, a chunk at a time, no further."""
    import os

    from netfleet.store.import_base import _read_up_to, read_checked

    for size in (0, 1, 4096, 300_001):
        path = tmp_path / f"f{size}"
        path.write_bytes(os.urandom(size))
        data, st = read_checked(path, False)
        assert data == path.read_bytes() and st.st_size == size
    read, write = os.pipe()
    try:
        os.write(write, b"a" * 10)
        os.write(write, b"b" * 10)
        os.close(write)
        assert _read_up_to(read, 15, 4) == b"a" * 10 + b"b" * 5
        assert _read_up_to(read, 100, 4) == b"b" * 5  # its end: fewer
        assert _read_up_to(read, 100, 4) == b""
    finally:
        os.close(read)


def test_a_reused_json_encoder_writes_what_json_dumps_writes() -> None:
    """The rows' JSON texts, their C encoder made once: ``json.dumps``'s, byte for byte."""
    import datetime as dt
    import math

    from netfleet.catalog.runrow import json_encoder

    values: list[Any] = [
        BASE,
        {"b": [1, 2.5, -0.0, 1e16, 1e-7, math.inf, -math.inf], "a": {"z": None, "é": "ü\n\x00"}},
        {1: "int key", 2.5: "float key", False: "bool", None: "none"},
        ["t2.nano", "x\u2028y", "\ud800"],
        {"when": dt.date(2018, 6, 12), "big": 2**70},
        "text",
        3,
        None,
        [],
        {},
    ]
    for options in ({}, {"sort_keys": True}, {"sort_keys": True, "default": str}):
        encode = json_encoder(**options)
        for value in values:
            try:
                want = json.dumps(value, **options)
            except TypeError:  # a date without default, mixed keys sorted
                with pytest.raises(TypeError):
                    encode(value)
                continue
            assert encode(value) == want
    nan = json_encoder()(math.nan)
    assert nan == json.dumps(math.nan) == "NaN"


@pytest.mark.parametrize("how", ["few_deferred", "checks_fail"])
def test_a_task_that_cannot_wait_or_check_at_once_is_the_per_file_path_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Past ``DEFERRED_ROWS`` sums a task's files are checked one by one; should the task's
    checks fail on something unforeseen, each file gets its own (a rate no link carries still
    refused): either way the reads and tables are the per-file path's."""
    from netfleet.catalog import typedsums

    _write(tmp_path / "src", _edges())
    want = None
    with monkeypatch.context() as m:
        _by_file_path(m)
        want = _task(tmp_path / "src")
    if how == "few_deferred":
        monkeypatch.setattr(readtasks, "DEFERRED_ROWS", 10)
    else:

        def unforeseen(self: Any) -> list[str]:
            raise ValueError("unforeseen")

        monkeypatch.setattr(typedsums.TaskSums, "verdicts", unforeseen)
    got = _task(tmp_path / "src")
    assert got == want
    states = {Path(r["source"]).stem: r["state"] for r in got[0]}
    assert states["too_fast"] == "bad" and states["plain"] == "ok"


def test_a_task_s_runs_and_ends_as_columns_are_the_rows_own() -> None:
    """:meth:`_Batch.add_columns`' batches are those of the same runs as rows, in order after
    the rows queued before them; a value Arrow refuses refuses its run alone."""
    import pyarrow as pa

    from netfleet.catalog.ingestion import _Batch
    from netfleet.catalog.runrow import ColumnRows, imported_run_values
    from netfleet.iperf3json import end_values
    from netfleet.store.import_iperf3 import checked_shape, iperf3_fields

    runs = []
    for n, doc in enumerate(json.loads(p.read_bytes()) for p in PLAIN):
        _, fields = iperf3_fields(
            Path(f"/x/{n}.json"), b"{}", checked_shape(doc), labels={}, found=[],
            epoch_label=None, side="auto", mtime=1.5e9, digest=f"{n:064}", keep_bytes=False,
        )  # fmt: skip
        envelope = onepass._direct_envelope(f"r{n}", "camp", fields)
        values = imported_run_values(envelope, "src")
        assert values is not None
        runs.append(ColumnRows(values, [end_values(f"r{n}", "client", envelope["result"])]))
    bad = ColumnRows((*runs[1].run[:3], 2**70, *runs[1].run[4:]), runs[1].ends)  # ``repeat``
    columns, rows = _Batch(), _Batch()
    columns.add(runs[0].rows())
    assert columns.add_columns([runs[0], bad, *runs[2:]]) == [(bad.rows(), _refused(bad))]
    for run in (runs[0], runs[0], *runs[2:]):
        rows.add(run.rows())
    rows.convert()
    for table in ("runs", "ends"):
        got, want = (pa.Table.from_batches(b.parts[table]) for b in (columns, rows))
        assert got.to_pylist() == want.to_pylist()
        assert got.num_rows == len(runs)


def _refused(run: Any) -> str:
    from netfleet.catalog.ingestion import _Batch

    batch = _Batch()
    batch.add(run.rows())
    return batch.convert()[0][1]


def test_a_document_s_shape_is_checked_as_before() -> None:
    """:func:`checked_shape`'s shortcut for a plain document (each field absent, null or of its
    type) lets through only what the walk over its fields lets through, and a field of another
    type anywhere is refused by the walk, naming it."""
    from netfleet.store.import_base import ImportProblem
    from netfleet.store.import_iperf3 import _SHAPE, checked_shape

    for path, kind in _SHAPE:
        for value in (None, [] if kind is dict else {}, "x", 3):
            doc = copy.deepcopy(BASE)
            doc.setdefault("end", {}).setdefault("sum", {})
            doc.setdefault("server_output_json", {})
            node = doc
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
            if value is None:
                assert checked_shape(doc) is doc
                continue
            with pytest.raises(ImportProblem, match=rf"^{'.'.join(path)} is "):
                checked_shape(doc)


def test_a_task_reads_the_byte_limit_once_and_holds_each_file_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The raw-result limit a task reads from the environment holds for each of its files:
    one larger on disk, and one whose gzip inflates past it, are refused with the limit."""
    import gzip

    text = json.dumps(BASE).encode()
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "big.json").write_bytes(text)
    (folder / "inflates.json.gz").write_bytes(gzip.compress(text))
    (folder / "small.json").write_bytes(json.dumps(_one_interval()).encode())
    monkeypatch.setenv("NETFLEET_MAX_RAW_BYTES", str(len(text) - 1))
    assert len(gzip.compress(text)) < len(text) - 1
    items = list(listed([str(folder)], False))
    reads, _ = readtasks.read_task(items, Options("c", {}, None), False)
    got = {Path(r.row["source"]).name: r.row for r in reads}
    assert "NETFLEET_MAX_RAW_BYTES" in got["big.json"]["reason"]
    assert "inflates to more than" in got["inflates.json.gz"]["reason"]
    assert got["small.json"]["state"] == "ok"


def _one_interval() -> dict[str, Any]:
    """The captured client's document with one interval (under the limit above)."""
    doc = copy.deepcopy(BASE)
    doc["intervals"] = doc["intervals"][:1]
    return doc


def test_the_fast_numbers_are_the_values_own() -> None:
    """``fast_float`` and ``fast_int`` (the ``runs``/``ends`` values' shortcut) give what
    ``as_float`` and ``as_int`` give, of the same type, for every kind of JSON value."""
    import math

    from netfleet.iperf3json import fast_float, fast_int
    from netfleet.values import as_float, as_int

    values = [None, True, False, 0, 1, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64,
              0.0, -0.0, 1.5, 1e308, float(2**63), math.nan, math.inf, -math.inf, "7", " 8 ",
              "1.5", "x", "", [], {}]  # fmt: skip
    for value in values:
        for fast, plain in ((fast_float, as_float), (fast_int, as_int)):
            got, want = fast(value), plain(value)
            assert type(got) is type(want) and got == want, (fast.__name__, value)


def test_a_task_pauses_the_collector_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The garbage collector is off while a task reads its files and as it was after (on, or
    off when the caller had turned it off), also when a read raises; a task's reads leave no
    cycle behind for it."""
    import gc

    _write(tmp_path / "t", {"plain": BASE, "other": _one_interval()})
    items = list(listed([str(tmp_path / "t")], False))
    alone = onepass.read_local
    seen: list[bool] = []

    def read_local(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return alone(*args)

    monkeypatch.setattr(onepass, "read_local", read_local)
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            gc.enable() if enabled else gc.disable()
            gc.collect()
            readtasks.read_task(items, Options("c", {}, None), False)
            assert gc.isenabled() is enabled
            assert gc.collect() == 0
        assert seen == [False] * 4
        gc.enable()
        monkeypatch.setattr(onepass, "read_local", lambda *_: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            readtasks.read_task(items, Options("c", {}, None), False)
        assert gc.isenabled()
    finally:
        gc.enable() if was else gc.disable()


def test_a_task_without_numpy_checks_its_files_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where NumPy is kept out (the cheatsheet command's own process), a task defers no file
    to the task-wide checks (they need NumPy) and gives the per-file path's reads and tables."""
    _write(tmp_path / "src", {**_edges(), **{p.name: json.loads(p.read_bytes()) for p in PLAIN}})
    with monkeypatch.context() as m:
        _by_file_path(m)
        want = _task(tmp_path / "src")

    deferred: list[Any] = []  # (raising would be taken for the checks' own failure)
    monkeypatch.setattr("netfleet.catalog.typedsums.TaskSums", lambda *a: deferred.append(a))
    monkeypatch.setitem(__import__("sys").modules, "numpy", None)
    assert _task(tmp_path / "src") == want
    assert not deferred
