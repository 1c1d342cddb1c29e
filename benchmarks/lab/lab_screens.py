"""The web page's views of a lab run, rendered from the suite's raw data on any machine (a device machine has no
browser): the stored dispatch list and the lab page with each capture's replays and comparisons.

    python benchmarks/lab/lab_screens.py RAW_WEB_DIR OUT_DIR [--prefix NAME]

RAW_WEB_DIR is a `benchmarks/run lab` step `web` folder (``scope.json``, ``captures.json`` and one folder per
capture holding its ``manifest.json`` and ``history.jsonl``). A store is rebuilt from those files alone (no
tensors: the pages read manifests and histories), ``kerntune serve`` runs on it on loopback, and headless Chromium
(Playwright driving the system's ``chromium``) saves OUT_DIR/NAME-dispatches.png and OUT_DIR/NAME-lab.png
(NAME: ``lab``). Exit 2 with a sentence when a file or the browser is missing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--prefix", default="lab")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    needed = [args.raw / "scope.json", args.raw / "captures.json"]
    missing = [str(p) for p in needed if not p.is_file()]
    missing += [] if chromium else ["chromium (apt-get install chromium)"]
    if missing:
        print(f"lab_screens: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    names = json.loads((args.raw / "captures.json").read_text()).values()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kerntune-screens-") as tmp:
        home, programs = Path(tmp) / "store", Path(tmp) / "programs"
        programs.mkdir()
        shutil.copyfile(args.raw / "scope.json", programs / "scope.json")
        for name in names:
            shutil.copytree(args.raw / name, home / "captures" / name)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-m", "kerntune", "serve", "--port", str(port), "--programs", str(programs)],
            env={
                "KERNTUNE_HOME": str(home),
                "PATH": "/usr/bin:/bin",
                "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    urllib.request.urlopen(base + "/lab", timeout=2).close()
                    break
                except OSError:
                    time.sleep(0.3)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(base + "/dispatches")
                page.fill("input[name=scope]", "scope.json")
                page.click("text=Show stored scope")
                page.wait_for_selector("table.dispatches[data-state=listed]", timeout=30_000)
                page.screenshot(path=str(args.out / f"{args.prefix}-dispatches.png"), full_page=True)
                page.goto(base + "/lab")
                page.screenshot(path=str(args.out / f"{args.prefix}-lab.png"), full_page=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(10)
    print(f"wrote {args.out / (args.prefix + '-dispatches.png')} and {args.out / (args.prefix + '-lab.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
