"""The web page in headless Chromium (Playwright driving Debian's ``chromium``), started by the function the start
command calls (``web.start.serve_page``), opened at the URL it prints (with its per-start token): start a PoCL
tune from the page, watch it finish, open the run and check its charts show the stored numbers, diff two
candidates, replay a lab capture; list an OpenCL program's dispatches, "tune this kernel" on one, and in the lab
compare a variant source with the capture and save it; list a stored scope's kernels and GEMM operator calls; a
run page that leads with its verdict and whose config table sorts and filters. ``KERNTUNE_SCREENSHOTS=DIR`` keeps
the main views' screenshots there (docs/screenshots holds the committed ones). In CI (``CI=true``) a missing
browser is a failure, not a skip."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, EXAMPLES, FAST_ENV, CliResult, series_label

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _require() -> None:
    missing = [
        what
        for what, ok in (
            ("playwright", _has("playwright.sync_api")),
            ("fastapi", _has("fastapi")),
            ("uvicorn", _has("uvicorn")),
            ("chromium", CHROMIUM is not None),
        )
        if not ok
    ]
    if missing and os.environ.get("CI") == "true":
        pytest.fail(
            f"CI must run the browser test: missing {', '.join(missing)} (apt-get install chromium; "
            "pip install -e '.[web,dev]')"
        )
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


def _has(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@dataclass(frozen=True)
class Served:
    base: str
    home: Path
    url: str
    """The URL the start function printed: the page's address with the per-start token."""
    token: str

    def json(self, path: str) -> Any:
        request = urllib.request.Request(self.base + path, headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)


def _status(url: str) -> int:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return 200
    except urllib.error.HTTPError as refused:
        return refused.code


@pytest.fixture
def server(tmp_path: Path, kerntune: Callable[..., CliResult]) -> Iterator[Served]:
    _require()
    home = tmp_path / "store"
    lab = tmp_path / "lab"
    shutil.copytree(DATA / "lab", lab)
    captured = kerntune(
        "lab",
        "capture",
        "--kernel",
        "axpy",
        "--nth",
        "2",
        "-o",
        str(home / "captures" / "axpy2"),
        "--",
        "python",
        str(lab / "opencl_program.py"),
    )
    assert captured.code == 0, captured.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = (
        "import sys; from pathlib import Path; from kerntune.web.start import serve_page; "
        "serve_page(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), '127.0.0.1', int(sys.argv[4]))"
    )  # the function the start command calls: it makes the token and prints the URL that carries it
    process = subprocess.Popen(
        [sys.executable, "-c", start, str(home), str(EXAMPLES), str(lab), str(port)],
        env={**os.environ, **FAST_ENV, "KERNTUNE_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    printed = process.stdout.readline()
    assert printed.startswith(f"kerntune web: open http://127.0.0.1:{port}/?token="), printed
    url = printed.split()[-1]
    base, token = url.split("/?token=")
    deadline = time.monotonic() + 60
    while True:
        try:
            assert _status(base + "/api/runs") == 401  # the token is required, on loopback too
            break
        except OSError:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline, "the server did not answer in 60 s"
            time.sleep(0.3)
    try:
        yield Served(base, home, url, token)
    finally:
        process.terminate()
        process.wait(10)
        for stream in (process.stdout, process.stderr):
            if stream:
                stream.close()


def _folder(tmp: Path) -> Path:
    folder = Path(os.environ.get("KERNTUNE_SCREENSHOTS") or tmp)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _shot(page: object, name: str, tmp: Path) -> None:
    folder = _folder(tmp)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def test_start_a_tune_watch_it_and_read_its_charts(server: Served, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    base = server.base
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(server.url)  # the printed URL: the page keeps its token for the requests that follow
        page.select_option("select[name=spec]", "opencl_vector_add")
        page.fill("input[name=budget]", "4")
        page.click("#start")
        page.wait_for_selector("#job[data-state=done]", timeout=300_000)
        _shot(page, "runs", tmp_path)
        run_id = page.get_attribute("#job-run", "href").rsplit("/", 1)[-1]  # type: ignore[union-attr]
        page.click("#job-run")
        page.wait_for_selector("g.series")
        stored = server.json(f"/api/runs/{run_id}")["shapes"][0]
        winner = stored["winner"]
        label = series_label(winner)
        drawn = page.locator("g.series", has=page.locator(f"text={label}")).first
        measured = winner.get("confirmed") or winner["measurement"]
        assert float(drawn.get_attribute("data-median-ms") or "nan") == float(f"{measured['median_ms']:.6g}")
        assert int(drawn.get_attribute("data-n") or 0) == measured["n"]
        assert page.locator("circle.best").count() >= 1 and page.locator("path.best-so-far").count() == 2
        _shot(page, "run", tmp_path)
        page.select_option("select[name=b]", index=1)
        page.click("text=ISA and occupancy diff")
        page.wait_for_selector("table.diff")
        assert page.locator("table.diff tr").count() > 2
        _shot(page, "diff", tmp_path)
        page.goto(base + "/lab")
        page.click("text=Replay")
        page.wait_for_selector("#job[data-state=done]", timeout=120_000)
        assert "reproduces the capture: true" in page.inner_text("#job")
        page.reload()
        assert page.inner_text("table.captures").count("replay") == 1  # the replay is in the capture's history
        _shot(page, "lab", tmp_path)
        browser.close()


def test_from_a_program_s_dispatch_list_to_a_saved_variant(server: Served, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    base, home = server.base, server.home
    lab = tmp_path / "lab"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(server.url)
        page.goto(base + "/dispatches")
        page.select_option("select[name=program]", "opencl_program.py")
        page.click("text=List dispatches")
        page.wait_for_selector("table.dispatches[data-state=listed]", timeout=120_000)
        row = page.locator("table.dispatches tr", has_text="axpy")
        assert row.inner_text().split("\t")[:4] == ["axpy", "opencl", "3", "100.0%"], row.inner_text()
        _shot(page, "dispatches", tmp_path)
        row.locator("text=Tune this kernel").click()
        page.wait_for_selector("#open-capture", timeout=120_000)
        name = page.get_attribute("#open-capture", "href").split("#", 1)[1]  # type: ignore[union-attr]
        assert (home / "captures" / name / "manifest.json").is_file()  # the capture the row asked for
        page.click("#open-capture")
        capture = page.locator(f"tr[data-capture='{name}']")
        capture.locator("input.variant").fill("axpy_slow.cl")
        capture.locator("text=Compare").click()
        page.wait_for_selector("#job[data-state=done]", timeout=120_000)
        text = page.inner_text("#job")
        assert "validation (bitwise) passed" in text and "variant/original time" in text, text
        capture.locator("text=Save").click()
        page.wait_for_selector("#job:has-text('saved into')", timeout=120_000)
        assert "4000" in (lab / "opencl_kernels.py").read_text()  # the variant's loop, now in the program's source
        page.reload()
        assert "compare" in page.inner_text(f"tr[data-capture='{name}']")
        _shot(page, "lab-compare", tmp_path)
        outside = page.evaluate("""async () => (await fetch('/api/lab/captures', {method: 'POST',
            headers: {'Content-Type': 'application/json'},
            body: JSON.stringify({program: '../../etc/passwd.py', kernel: 'axpy'})})).status""")
        assert outside == 400  # programs outside the served folder are refused
        # A stored scope (the H200's, of the Llama example's compiled prefill): its kernels by device time and the
        # GEMM operator calls behind the library's kernels, each with its "Tune this kernel".
        shutil.copyfile(DATA / "scope_h200" / "prefill_compiled_scope.json", lab / "scope.json")
        page.goto(base + "/dispatches")
        page.fill("input[name=scope]", "scope.json")
        page.click("text=Show stored scope")
        page.wait_for_selector("table.dispatches[data-state=listed]", timeout=30_000)
        blas = page.locator("table.dispatches tr", has_text="nvjet_sm90").first.inner_text().split("\t")
        assert blas[1:] == ["vendor BLAS", "45", "51.2%", "its operator calls below"], blas
        generated = page.locator("table.dispatches tr", has_text="triton_poi_fused__unsafe_view_mul_silu_9")
        assert generated.locator("text=Tune this kernel").count() == 1
        gemm = page.locator("table.dispatches tr", has_text="aten::mm 8192x14336x4096 bfloat16 NT")
        assert gemm.inner_text().split("\t")[1:3] == ["operator call", "40"], gemm.inner_text()
        assert gemm.locator("text=Tune this kernel").count() == 1
        _shot(page, "dispatches-stored-scope", tmp_path)
        browser.close()


def test_the_run_page_leads_with_its_verdict_and_its_config_table_sorts_and_filters(
    server: Served, kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Every config of the PoCL vector add (LS × WPT) timed, then in the browser: the verdict first, a named
    speedup; the config table sorted by median both ways and by a parameter; filtered by text and by a
    parameter's choice; the two-parameter grid drawn from the same numbers."""
    from playwright.sync_api import sync_playwright

    tuned = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--strategy", "exhaustive")
    assert tuned.code == 0, tuned.stderr
    run_id = server.json("/api/runs")[0]["id"]
    shape = server.json(f"/api/runs/{run_id}")["shapes"][0]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(server.url)
        page.goto(f"{server.base}/runs/{run_id}")
        first = page.locator("h2").first
        assert first.inner_text() == "Verdict"  # the verdict leads, above the run's fields
        verdict = page.inner_text("#verdict")
        assert shape["winner"]["config"] and "Winner:" in verdict and "How it was checked" in verdict
        assert "correctness gate: pass" in verdict, verdict
        for b in shape["baselines"]:
            if b["id"] == shape["winner"]["id"]:  # the default config itself was fastest
                assert f"the baseline {b['label']} itself won" in verdict, verdict
            elif b.get("winner_speedup"):  # a named speedup, the number the API gives
                shown = page.locator(f'#verdict li.speedup[data-baseline="{b["label"]}"]')
                assert abs(float(shown.get_attribute("data-speedup") or "nan") - b["winner_speedup"]) < 1e-4
                assert ("than" if abs(b["winner_speedup"] - 1) >= 0.005 else "as fast as") in shown.inner_text()
        table = page.locator("table.configs").first
        rows = table.locator("tbody tr")
        total = rows.count()
        assert total >= 9, total  # the 9 configs of the space, and the baselines timed beside them

        def column(name: str) -> list[str]:
            index = [h.get_attribute("data-name") for h in table.locator("thead th").all()].index(name)
            return [r.locator("td").nth(index).get_attribute("data-value") or "" for r in rows.all() if r.is_visible()]

        def medians() -> list[float]:
            return [float(v) for v in column("median ms")]

        table.locator('th[data-name="median ms"]').click()
        up = medians()
        assert up == sorted(up) and table.locator('th[data-name="median ms"]').get_attribute("aria-sort") == "ascending"
        table.locator('th[data-name="median ms"]').click()
        down = medians()
        assert down == sorted(up, reverse=True) and down != up  # the order changed
        table.locator('th[data-name="LS"]').click()
        ls = [int(v) for v in column("LS") if v]
        assert ls == sorted(ls) and len(set(ls)) == 3
        _shot(page, "run-configs-sorted", tmp_path)
        box = page.locator(".configs-box").first
        box.locator("input.filter").fill("LS=16")
        assert rows.evaluate_all("rs => rs.filter(r => !r.hidden).length") == 3
        assert box.locator(".shown").inner_text() == f"3 of {total} configs shown"
        assert set(column("LS")) == {"16"}
        box.locator("input.filter").fill("")
        box.locator('select.pick[name="WPT"]').select_option("4")
        assert set(column("WPT")) == {"4"} and len(column("WPT")) == 3
        box.locator('select.pick[name="WPT"]').select_option("")
        assert len(column("WPT")) == total
        cells = page.locator("svg rect.cell")
        assert cells.count() == 9  # the LS × WPT grid, every pair timed
        drawn = {(c.get_attribute("data-x"), c.get_attribute("data-y")) for c in cells.all()}
        assert len(drawn) == 9
        outlined = page.locator('svg rect.cell[stroke="#cc3311"]')  # the winner's cell
        won = {str(v) for v in shape["winner"]["config"].values()}
        assert outlined.count() == 1 and {outlined.get_attribute("data-x"), outlined.get_attribute("data-y")} == won
        page.locator("#verdict").screenshot(path=str(_folder(tmp_path) / "run-verdict.png"))
        box.screenshot(path=str(_folder(tmp_path) / "run-configs.png"))
        page.locator("svg", has=page.locator("rect.cell")).first.screenshot(
            path=str(_folder(tmp_path) / "run-two-parameters.png")
        )
        browser.close()
