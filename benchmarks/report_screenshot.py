"""Render MD-Roofline HTML reports and look at them in a real headless browser.

Two reports for resnet50 (batch 32, fp32, counted on the ``meta`` device):

- ``resnet50-dp2``: the ``mixed-lab`` example cluster, two data-parallel replicas;
- ``resnet50-straggler-dp4``: four V100s, one of which measured half the others' APF, so the
  report has a straggler to show.

For each it writes ``benchmarks/results/report/<name>.html``, its figures (PNG and SVG) under
``benchmarks/results/report/<name>/``, and a full-page screenshot ``<name>-screenshot.png`` taken
by headless Chromium (Debian: ``apt-get install chromium``). It also checks in the browser that
the page loads with no external request in it and that the block table sorts: a copy of the page
clicks the "predicted" header twice and reports the first row, which must be the heaviest block.

Run: ``python benchmarks/report_screenshot.py`` (exit status 2 when Chromium is missing, 1 when a
browser check fails).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trainplay.hardware import load_cluster
from trainplay.hardware.cluster import parse_cluster
from trainplay.report.figures import save_figures
from trainplay.report.html import render_html
from trainplay.roofline.analysis import RooflineResult
from trainplay.roofline.api import analyze_model
from trainplay.roofline.layout import Parallel

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "report"
WIDTH = 1400
BROWSERS = ("chromium", "chromium-browser", "google-chrome")

STRAGGLER_CLUSTER = {
    "name": "four-v100-one-slow",
    "nodes": [
        {
            "name": "n0",
            "intra_link": "nvlink2",
            "devices": [
                {
                    "type": "V100-16GB",
                    "count": 4,
                    # hypothetical measurements: rank 2 reaches half the GEMM rate of its peers
                    "measured": [
                        {"apf": 14.0e12, "apm": 800e9},
                        {"apf": 14.0e12, "apm": 800e9},
                        {"apf": 7.0e12, "apm": 800e9},
                        {"apf": 14.0e12, "apm": 800e9},
                    ],
                }
            ],
        }
    ],
}

# Appended to a copy of the page: sort by "predicted" twice (descending) and by "#" once
# (ascending), and write what the browser saw where --dump-dom shows it.
PROBE = """<script>
(function () {
  var heads = Array.prototype.slice.call(document.querySelectorAll("#block-table thead th"));
  function header(text) {
    return heads.filter(function (th) { return th.firstChild.textContent.trim() === text; })[0];
  }
  function first() { return document.querySelector("#block-table tbody tr").cells[1].textContent; }
  header("predicted").click(); header("predicted").click();
  var heaviest = first();
  header("#").click();
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({heaviest: heaviest, firstInOrder: first(),
    height: document.documentElement.scrollHeight, svgs: document.querySelectorAll("svg").length});
  document.body.appendChild(out);
})();
</script>"""


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    sys.exit(
        "report_screenshot: no Chromium found (looked for " + ", ".join(BROWSERS) + "); "
        "install it, e.g. `apt-get install -y chromium` on Debian, and run again."
    )


def _chromium(exe: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="trainplay-chromium-") as profile_dir:
        return subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                f"--user-data-dir={profile_dir}",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )


def probe(exe: str, html: Path) -> dict:
    """Open a copy of the page with the probe script and read back what it found."""
    import json

    copy = html.with_name(html.stem + ".probe.html")
    copy.write_text(html.read_text().replace("</body>", PROBE + "</body>"))
    try:
        done = _chromium(exe, "--virtual-time-budget=3000", "--dump-dom", copy.as_uri())
    finally:
        copy.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    if not found:
        raise RuntimeError(f"the probe did not run in Chromium:\n{done.stderr[-2000:]}")
    return json.loads(found.group(1).replace("&quot;", '"'))


def screenshot(exe: str, html: Path, png: Path, height: int) -> None:
    done = _chromium(exe, f"--window-size={WIDTH},{height}", f"--screenshot={png}", html.as_uri())
    if done.returncode != 0 or not png.exists():
        raise RuntimeError(f"Chromium took no screenshot of {html}:\n{done.stderr[-2000:]}")


def report(name: str, result: RooflineResult, exe: str) -> bool:
    """Write one report, its figures and screenshot; True when the browser checks pass."""
    started = time.perf_counter()
    html = OUT / f"{name}.html"
    html.write_text(render_html(result))
    figures = save_figures(result, OUT / name)
    rendered = time.perf_counter() - started
    text = html.read_text()
    external = re.findall(r"(?:https?:)?//[\w.-]+\.\w+/|<link\b|\bsrc\s*=\s*[\"'](?!data:)", text)
    seen = probe(exe, html)
    png = OUT / f"{name}-screenshot.png"
    screenshot(exe, html, png, seen["height"] + 40)
    heaviest = max(result.layers, key=lambda x: x.predicted_s).name
    checks = {
        "no external reference": not external,
        "two charts in the page": seen["svgs"] >= 2,
        f"sorted by predicted, first row is {heaviest}": seen["heaviest"] == heaviest,
        f"sorted by #, first row is {result.layers[0].name}": seen["firstInOrder"]
        == result.layers[0].name,
    }
    print(
        f"{name}: {html.relative_to(ROOT)} ({html.stat().st_size / 1024:.0f} KiB, {rendered:.1f} s)"
    )
    for path in [*figures, png]:
        print(f"  {path.relative_to(ROOT)}  {path.stat().st_size / 1024:.0f} KiB")
    print(f"  page height {seen['height']} px at width {WIDTH}")
    for check, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {check}")
    return all(checks.values())


def main() -> int:
    exe = browser()
    OUT.mkdir(parents=True, exist_ok=True)
    # analyze_model adds the what-if lines (it profiles at the batch and at twice it)
    mixed = load_cluster(ROOT / "tests/data/clusters/mixed-lab.yaml")
    cases = [
        (
            "resnet50-dp2",
            analyze_model("resnet50", mixed, parallel=Parallel.parse("dp=2"), batch_size=32),
        ),
        (
            "resnet50-straggler-dp4",
            analyze_model(
                "resnet50",
                parse_cluster(STRAGGLER_CLUSTER),
                parallel=Parallel.parse("dp=4"),
                batch_size=32,
            ),
        ),
    ]
    results = [report(name, result, exe) for name, result in cases]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
