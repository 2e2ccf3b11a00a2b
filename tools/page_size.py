"""What a report.html costs a reader: its bytes, the bytes of the images it loads, and the page's
height at 1,000 px in headless Chromium (docs/analysis.md, "report.html and report.md").

    .venv/bin/python tools/page_size.py results/<campaign>-<time>/report.html
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH, HEIGHT = 1000, 800
PROBE = """<script>
window.addEventListener("load", () => {
  const d = document.createElement("div");
  d.id = "page-size";
  d.dataset.height = document.documentElement.scrollHeight;
  d.dataset.images = [...document.images].map(i => i.currentSrc.startsWith("data:") ? "" : i.currentSrc).join(" ");
  document.body.appendChild(d);
});
</script>"""


def measure(page: Path) -> dict[str, int]:
    """Bytes of the page, of the image files it links, and its height in px."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("error: chromium is not installed (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        probe = page.with_name(f".page-size-{page.name}")
        probe.write_text(page.read_text().replace("<head>", "<head>" + PROBE, 1))
        try:
            out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                  f"--user-data-dir={tmp}", f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars",
                                  "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120, check=False).stdout
        finally:
            probe.unlink()
    found = re.search(r'<div id="page-size" data-height="(\d+)" data-images="([^"]*)"', out)
    if found is None:
        raise SystemExit(f"error: {page} did not finish loading in Chromium")
    files = {Path(src.removeprefix("file://")) for src in found[2].split()}
    return {"html_bytes": page.stat().st_size, "linked_image_bytes": sum(f.stat().st_size for f in files if f.is_file()),
            "height_px": int(found[1])}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: tools/page_size.py REPORT_HTML", file=sys.stderr)
        return 2
    for name, value in measure(Path(argv[0])).items():
        print(f"{name}: {value:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
