"""Make ``docs/assets/report.png``, the picture of the report shown by the README and the site's home: the top of
the ``report.html`` of a run of the shipped sample, drawn by the distribution's Chromium (no browser download).

    council run --backend local --run-id sample
    python docs/hooks/report_picture.py runs/sample/report.html
"""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
OUT = Path(__file__).resolve().parents[1] / "assets" / "report.png"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="a run's report.html")
    ap.add_argument("--width", type=int, default=1100)
    ap.add_argument("--height", type=int, default=1000)
    args = ap.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(args.report.resolve().as_uri())
        page.screenshot(path=str(OUT), full_page=False)
        browser.close()
    print(OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
