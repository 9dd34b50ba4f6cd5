"""A toy engine that exists only in the tests: one module (this one) and one registry line
(``netfleet.engines.register_engine(Toy())``) make netfleet install, preflight, doctor,
import, ingest, advise on and report it — tests/test_engine_registry.py proves it.

Its tool, ``toyperf``, is a tiny Python program :func:`install_tool` writes into a folder (put
on PATH): ``toyperf --version``; ``toyperf -c ADDRESS -P N -t SECONDS`` prints a text report
of a link whose every flow is capped at :data:`FLOW_CAP` (so N streams give N × the cap).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from netfleet.engines.contract import (
    Claim,
    EngineInfo,
    Evidence,
    Host,
    ImportedRun,
    ImportFormat,
    Measure,
    Outcome,
    Summary,
    TableRows,
)
from netfleet.engines.params.base import EngineParams
from netfleet.errors import EngineError

#: every toy flow is capped at this many bit/s
FLOW_CAP = 100e6
TOOL = """#!{python}
import sys
args = sys.argv[1:]
if args == ["--version"]:
    print("toyperf 1.0 (a toy)")
    sys.exit(0)
address = args[args.index("-c") + 1]
streams = int(args[args.index("-P") + 1])
seconds = int(args[args.index("-t") + 1])
print(f"toyperf 1.0 client to {{address}} streams {{streams}} seconds {{seconds}}")
for i in range(seconds):
    print(f"interval {{i}} {{i + 1}} bytes {{int({cap} * streams / 8)}}")
print(f"retransmits {{streams * 3}}")
"""


def install_tool(folder: Path) -> Path:
    """Write the ``toyperf`` program into ``folder``; returns its path."""
    path = folder / "toyperf"
    path.write_text(TOOL.format(python=sys.executable, cap=int(FLOW_CAP)))
    path.chmod(0o755)
    return path


class ToyParams(EngineParams):
    parallel: int = Field(1, ge=1, le=16, description="streams (-P)")


_HEAD = re.compile(rb"^toyperf (\S+) client to (\S+) streams (\d+) seconds (\d+)")


def _claims(plain: bytes) -> Claim:
    return 2 if _HEAD.match(plain.lstrip()) else 0


def _read(plain: bytes, side: str) -> ImportedRun:
    text = plain.decode("utf-8")
    head = _HEAD.match(plain.lstrip())
    if head is None:
        raise ValueError("not toyperf output")
    version, address, streams, seconds = (g.decode() for g in head.groups())
    intervals = [
        {"start": float(a), "end": float(b), "bytes": int(n)}
        for a, b, n in re.findall(r"^interval (\S+) (\S+) bytes (\d+)$", text, re.M)
    ]
    retrans = re.search(r"^retransmits (\d+)$", text, re.M)
    return ImportedRun(
        result={
            "intervals": intervals,
            "streams": int(streams),
            "retransmits": int(retrans.group(1)) if retrans else None,
        },
        subject="client",
        direction="out",
        duration_s=float(seconds),
        params={"parallel": int(streams), "duration": float(seconds)},
        version=version,
        server_address=address,
    )


def _bps(interval: Mapping[str, Any]) -> float:
    return interval["bytes"] * 8 / (interval["end"] - interval["start"])


class Toy:
    name = "toy"
    title: ClassVar[str] = "A toy throughput test (tests only)."
    params_model: ClassVar[type[ToyParams]] = ToyParams
    measures: ClassVar[Measure] = "throughput"
    needs_server = False
    tools: tuple[str, ...] = ("toyperf",)
    packages: ClassVar[dict[str, dict[str, str]]] = {
        "toyperf": {"apt-get": "toyperf-pkg", "dnf": "toyperf"}
    }
    imports: ClassVar[ImportFormat] = ImportFormat("toyperf text reports", _claims, _read)

    async def probe(self, host: Host) -> EngineInfo:
        res = await host.run(["toyperf", "--version"])
        m = re.match(r"toyperf (\d+)\.(\d+)", res.stdout)
        if res.returncode != 0 or m is None:
            raise EngineError(f"host {host.name}: no toyperf", hint="install toyperf-pkg")
        return EngineInfo(self.name, f"{m[1]}.{m[2]}", (int(m[1]), int(m[2])))

    def unsupported(self, params: Any, info: EngineInfo) -> list[str]:
        return []

    async def execute(self, session: Any, params: Any) -> Outcome:
        raise EngineError("the toy engine only imports its files")

    def salvage(self, session: Any, params: Any, interrupted: bool) -> Outcome:
        return Outcome("failed", "toy", None)

    @staticmethod
    def table_rows(
        run_id: str,
        result: Mapping[str, Any],
        params: Mapping[str, Any],
        outputs: Mapping[str, Any],
    ) -> TableRows:
        rows = [
            {
                "run_id": run_id,
                "side": "client",
                "role": "receiver",
                "flow": "client_to_server",
                "kind": "sum",
                "idx": n,
                "start": i["start"],
                "end": i["end"],
                "seconds": i["end"] - i["start"],
                "bytes": i["bytes"],
                "bits_per_second": _bps(i),
                "omitted": False,
            }
            for n, i in enumerate(result.get("intervals") or [])
        ]
        return {"intervals": rows, "runs": [{"interval": 1.0}]}

    @staticmethod
    def summary(result: Mapping[str, Any]) -> Summary:
        rates = [_bps(i) for i in result.get("intervals") or []]
        bps = sum(rates) / len(rates) if rates else None
        return Summary(bps, f"{(bps or 0) / 1e6:.0f} Mbit/s of toy")

    @staticmethod
    def evidence(result: Mapping[str, Any]) -> Evidence:
        sent = sum(i["bytes"] for i in result.get("intervals") or [])
        return Evidence(
            sent_bytes=float(sent),
            retransmits=result.get("retransmits"),
            streams=result.get("streams"),
        )
