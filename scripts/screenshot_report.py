"""Take the README's picture of the report: docs/report.png from build/index.html.

    make run && .venv/bin/python scripts/screenshot_report.py [build/index.html] [docs/report.png]

Headless Chromium (Debian's, as the browser tests use it: scripts/ensure_browser.sh installs
it; SPECNB_CHROMIUM points at another) through Playwright; the top of the page at 1000 x 640,
quantized to 64 colours with Pillow to keep the committed PNG small (about 50 KB).
"""

import os
import sys
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
VIEWPORT = {"width": 1000, "height": 640}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    src = Path(argv[0] if argv else ROOT / "build" / "index.html").resolve()
    dst = Path(argv[1] if len(argv) > 1 else ROOT / "docs" / "report.png")
    if not src.exists():
        print(f"screenshot_report: {src} not found; run `make run` first", file=sys.stderr)
        return 2
    browser_path = os.environ.get("SPECNB_CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
            page.goto(src.as_uri())
            page.wait_for_load_state("networkidle")
            raw = dst.with_suffix(".raw.png")
            page.screenshot(path=str(raw))
        finally:
            browser.close()
    Image.open(raw).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(dst, optimize=True)
    raw.unlink()
    print(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
