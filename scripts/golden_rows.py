"""Write the golden rows: the catalog rows the reference builder
(:func:`netfleet.catalog.build.envelope_rows`) makes of every captured fixture, as
tests/fixtures/golden/{ingest,register}/<case>.json — for ``ingest``, each captured iperf3
output as the envelope netfleet stores (tests/goldenkit.py); for ``register``, each captured
file an import takes as the reader of an import by reference makes it
(:func:`netfleet.catalog.reader.read_file`: the import's envelope, the same builder, per-stream
rows left in the file). tests/test_golden_rows.py reads the catalog each entry point writes
and compares. Run again after a deliberate change to a builder, and review the diff:

    .venv/bin/python scripts/golden_rows.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests import goldenkit  # noqa: E402

from netfleet.catalog.build import envelope_rows  # noqa: E402
from netfleet.catalog.reader import read_file  # noqa: E402
from netfleet.catalog.sourcelist import Options  # noqa: E402


def write(folder: Path, name: str, tables: dict[str, object]) -> None:
    path = folder / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(tables, indent=None, separators=(",", ":"), ensure_ascii=False)
    path.write_text(text.replace("],[", "],\n[") + "\n")


def main() -> None:
    out = goldenkit.GOLDEN_DIR
    for n, name in enumerate(goldenkit.CASES):
        env = goldenkit.envelope(name, goldenkit.run_id(n, name))
        rows = envelope_rows(json.loads(env.model_dump_json()), source="")
        write(
            out / "ingest", name, {t: goldenkit.normal(rows.table(t), t) for t in goldenkit.TABLES}
        )
    opts = Options(campaign="imported", labels={}, pattern=None)
    for path in goldenkit.FOREIGN:
        read = read_file(str(path), path.read_bytes(), {}, opts, mtime=goldenkit.MTIME)
        name = goldenkit.foreign_name(path)
        if read.rows is None:  # a refused capture: its reason is what is expected
            print(f"{name}: refused: {read.row.get('reason')}", file=sys.stderr)
            write(out / "register", name, {"refused": read.row.get("reason")})
            continue
        where = str(path.parent)
        tables = {t: goldenkit.normal(read.rows.table(t), t, where) for t in goldenkit.TABLES}
        write(out / "register", name, tables)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
