#!/usr/bin/env python3
"""Copy the tool output a real run stored in its envelope into tests/fixtures/ (never typed by
hand): for output that depends on a moment the capture scripts cannot bring about on demand —
iperf2's final reports ending late on a loaded machine.

    UV_PYTHON_DOWNLOADS=never uv run python scripts/fixture_from_envelope.py ENVELOPE.json.gz NAME

writes tests/fixtures/<tool>/NAME.txt (the client's output) and NAME.server.txt (the server's),
and records the envelope's run id, params and start time in tests/fixtures/<tool>/ENVELOPES.json.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def main(envelope: str, name: str) -> None:
    with gzip.open(envelope, "rt") as fh:
        doc = json.load(fh)
    result = doc["result"]
    tool = str(result["tool"])
    folder = ROOT / tool
    (folder / f"{name}.txt").write_text(result["client_output"])
    if result.get("server_output"):
        (folder / f"{name}.server.txt").write_text(result["server_output"])
    index = folder / "ENVELOPES.json"
    known = json.loads(index.read_text()) if index.exists() else {}
    known[name] = {k: doc.get(k) for k in ("run_id", "params", "started_at")}
    index.write_text(json.dumps(known, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
