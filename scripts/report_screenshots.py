"""Screenshots of the study report for docs/report/: the demo's own report (the report ``netfleet
demo`` writes, rebuilt from its catalog with the demo's arguments), and the credit (seed 004's
burst vs baseline) and compare sections of the report sample (scripts/report_sample.py).

    sudo .venv/bin/python scripts/report_screenshots.py WORKDIR docs/report               # ≈ 5 min
    sudo .venv/bin/python scripts/report_screenshots.py WORKDIR docs/report --demo DIR    # ≈ 3 min

With ``--demo DIR`` (a ``netfleet demo --dir DIR`` run) its catalog is used; without, the demo
campaign runs on a private copy of the demo lab (so a running ``netfleet demo`` is never
touched). ``--sample DIR`` reuses a report sample made before (scripts/report_sample.py DIR).
Each PNG is trimmed to the page's content; look at every one before committing.
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


def screenshot(html: Path, png: Path, height: int = 6000) -> None:
    """A headless Chromium screenshot (no request can leave: the proxy is a closed port),
    trimmed below the last non-white row."""
    from PIL import Image

    subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--proxy-server=http://127.0.0.1:9", f"--window-size=1150,{height}",
         f"--screenshot={png}", html.as_uri()],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    with Image.open(png) as im:
        rgb = im.convert("RGB")
    box = Image.eval(rgb, lambda v: 255 - v).getbbox()  # content: anything not white
    if box is not None:
        rgb.crop((0, 0, rgb.width, min(rgb.height, box[3] + 24))).save(png, optimize=True)


def main(
    work: Path, docs: Path, demo_dir: Path | None = None, sample_dir: Path | None = None
) -> None:
    from report_sample import make_sample

    from netfleet.demo import CAMPAIGN
    from netfleet.report.document import Document
    from netfleet.report.html import write_report
    from netfleet.report.study_report import build_document, write_study
    from netfleet.spec import load_spec

    docs.mkdir(parents=True, exist_ok=True)
    catalog = demo_dir / "catalog" if demo_dir else demo_catalog(work / "demo")
    campaign = load_spec(CAMPAIGN).campaign
    # exactly what `netfleet demo` calls at its end
    write_study(catalog, work / "demo.html", campaigns=(campaign,), title="netfleet demo")
    screenshot(work / "demo.html", docs / "demo-report.png")
    if sample_dir is not None:
        catalog = sample_dir / "catalog"
    else:
        _, catalog = make_sample(work / "sample", repeats=4, seconds=7)
    doc = build_document(catalog, compare=("client=a", "client=c"), target="150mbit")
    write_report(doc, work / "sample.html")
    for sid in ("burst", "compare"):
        part = Document(doc.title, doc.subtitle, [s for s in doc.sections if s.id == sid])
        write_report(part, work / f"{sid}.html")
        screenshot(work / f"{sid}.html", docs / f"{sid}-section.png")
    print(f"screenshots in {docs}; the sample's whole report: {work / 'sample.html'}")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work", type=Path)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--demo", type=Path, help="a `netfleet demo --dir DIR` directory")
    ap.add_argument("--sample", type=Path, help="a scripts/report_sample.py output directory")
    args = ap.parse_args()
    main(args.work, args.docs, args.demo, args.sample)
