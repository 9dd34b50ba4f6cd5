"""Screenshots of the study report for docs/report/: the demo's campaign (run on a private copy of
the demo lab, so a running ``netfleet demo`` is never touched), its whole report, and the credit
(burst vs baseline) and compare sections of the report sample (scripts/report_sample.py).

    sudo .venv/bin/python scripts/report_screenshots.py WORKDIR docs/report    # ≈ 5 minutes
"""

from __future__ import annotations

import asyncio
import re
import secrets
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def demo_catalog(work: Path) -> Path:
    """The demo campaign over a copy of the demo lab profile with a unique name."""
    from netfleet import lab
    from netfleet.catalog import ingest
    from netfleet.demo import CAMPAIGN
    from netfleet.lab.profiles import profile_path
    from netfleet.runner import run_campaign
    from netfleet.spec import load_spec
    from netfleet.store import open_root

    name = "rptd" + secrets.token_hex(3)
    work.mkdir(parents=True, exist_ok=True)
    body = profile_path("demo").read_text()
    body = re.sub(r"(?m)^name: demo$", f"name: {name}", body)
    body = body.replace("198.18.0.0/24", "198.18.214.0/24")
    (work / "lab.yaml").write_text(body)
    spec = re.sub(r"lab: demo\b", f"lab: {name}", CAMPAIGN.read_text())
    (work / "campaign.yaml").write_text(spec)
    state = work / "labstate"
    lab.up(lab.load_lab(work / "lab.yaml"), state_dir=state)
    try:
        asyncio.run(
            run_campaign(
                load_spec(work / "campaign.yaml"), open_root(work / "results"), None, state
            )
        )
    finally:
        lab.down(name, state_dir=state)
    ingest(open_root(work / "results"), work / "catalog")
    return work / "catalog"


def screenshot(html: Path, png: Path, height: int) -> None:
    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--proxy-server=http://127.0.0.1:9", f"--window-size=1150,{height}",
         f"--screenshot={png}", html.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def main(work: Path, docs: Path) -> None:
    from report_sample import make_sample

    from netfleet.report.document import Document
    from netfleet.report.html import write_report
    from netfleet.report.study_report import build_document

    docs.mkdir(parents=True, exist_ok=True)
    demo = build_document(demo_catalog(work / "demo"), title="netfleet demo: study report")
    write_report(demo, work / "demo.html")
    screenshot(work / "demo.html", docs / "demo-report.png", 2600)
    _, catalog = make_sample(work / "sample", repeats=4, seconds=7)
    doc = build_document(catalog, compare=("client=a", "client=c"), target="150mbit")
    write_report(doc, work / "sample.html")
    for sid, height in (("burst", 2300), ("compare", 700)):
        part = Document(doc.title, doc.subtitle, [s for s in doc.sections if s.id == sid])
        write_report(part, work / f"{sid}.html")
        screenshot(work / f"{sid}.html", docs / f"{sid}-section.png", height)
    print(f"screenshots in {docs}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
