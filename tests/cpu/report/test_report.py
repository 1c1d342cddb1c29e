"""``kerntune report``: one self-contained HTML page whose charts carry the stored numbers (a PoCL tune), and
charts that treat labels as data."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

from kerntune.report import charts
from kerntune.store import Store
from tests.conftest import EXAMPLES, CliResult, series_label


class _Page(HTMLParser):
    """Every element's tag and attributes, and the embedded report JSON."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.data, self._in_data = "", False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self._in_data = tag == "script" and dict(attrs).get("id") == "kerntune-report"

    def handle_data(self, data: str) -> None:
        if self._in_data:
            self.data += data

    def handle_endtag(self, tag: str) -> None:
        self._in_data = False


def test_the_report_shows_what_the_store_holds(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    tuned = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--budget", "4", "--json")
    assert tuned.code == 0, tuned.stderr
    shape = tuned.json()["shapes"][0]
    out = tmp_path / "report.html"
    done = kerntune("report", "last", "-o", str(out), "--json")
    assert done.code == 0, done.stderr
    page = _Page()
    page.feed(out.read_text())
    assert json.loads(page.data)["shapes"][0]["winner"] == shape["winner"]  # the same numbers show prints
    # Self-contained: nothing is fetched (the SVG namespace is a name, not a request).
    assert not [a for _, a in page.elements for k in ("src", "href") if a.get(k)]
    series = {a["data-label"]: a for t, a in page.elements if t == "g" and a.get("class") == "series"}
    winner = shape["winner"]
    drawn = series[series_label(winner)]
    measured = winner.get("confirmed") or winner["measurement"]  # the best measurement: confirmed when re-timed
    assert float(str(drawn["data-median-ms"])) == float(f"{measured['median_ms']:.6g}")
    assert int(str(drawn["data-n"])) == measured["n"]
    best = [float(str(a["data-ms"])) for t, a in page.elements if t == "circle" and a.get("class") == "best"]
    assert best and best[: len(best) // 2] == sorted(best[: len(best) // 2], reverse=True)  # only improves
    # Both traces (by evaluation, by seconds) draw every search-phase measurement the store holds.
    store = Store(tmp_path / "store")
    stored = [m for _, key, m, _ in store.measured_at(json.loads(page.data)["run"]["id"])]
    drawn_ms = [float(str(a["data-ms"])) for t, a in page.elements if t == "circle" and a.get("class") == "evaluation"]
    assert drawn_ms == [float(f"{m:.6g}") for m in stored] * 2
    refused = kerntune("report", "last", "-o", str(tmp_path / "report.pdf"))
    assert refused.code == 2 and "*.html" in refused.stderr


def test_labels_are_data_never_markup() -> None:
    svg = charts.distributions([("<script>alert(1)</script>", [1.0, 2.0], 1.5)])
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert charts.distributions([]) == "" and charts.trace([], "s") == ""


def test_the_roofline_chart_draws_each_ceiling_and_point() -> None:
    points = [
        {
            "shape": "N=1",
            "role": "search",
            "label": "B=64",
            "winner": True,
            "median_ms": 0.5,
            "intensity": 2.0,
            "flops_per_s": 4e12,
        },
        {
            "shape": "N=1",
            "role": "baseline",
            "label": "torch",
            "winner": False,
            "median_ms": 1.0,
            "intensity": 2.0,
            "flops_per_s": 2e12,
        },
    ]
    svg = charts.roofline(points, {"FMA (fp32)": 60e12, "bfloat16 matrix": 900e12}, 4e12)
    assert svg.count('class="ceiling"') == 2 and 'data-flops-per-s="9e+14"' in svg
    assert 'data-label="B=64" data-median-ms="0.5"' in svg and 'data-label="torch" data-median-ms="1"' in svg
    assert charts.roofline([], {"FMA": 1.0}, 1.0) == ""


def test_charts_fit_their_data() -> None:
    import re

    one = charts.trace([(1.0, 2.5)], "evaluations")  # a single evaluation is a point, not an empty frame
    assert one.count("<circle") == 1 and "one evaluation: 2.5 ms" in one and "<line" not in one
    flat = charts.trace([(1.0, 2.0), (1.0, 2.0)], "evaluations")  # every tick at one value: labelled once
    ticks = re.findall(r'class="tick" x="([\d.]+)"[^>]*>([^<]*)<', flat)
    assert [label for _, label in ticks].count("1") == 1 and flat.count(">2 ms<") == 1
    assert flat.count(">evaluations<") == 1  # the unit once per axis, not on every tick
    spread = charts.distributions([("a", [1.7, 1.8], 1.75), ("b", [29.0, 30.0], 29.5)])
    assert "log scale" in spread  # 1.7 to 30 ms: a decade and more, so a log axis
    xs = [float(x) for x in re.findall(r'cx="([\d.]+)"', spread)]
    assert xs[1] - xs[0] > 5  # 1.7 and 1.8 ms stay apart instead of squeezed into one pixel at the left
    assert "log scale" not in charts.distributions([("a", [1.0, 1.2], 1.1)])
    for svg in (flat, spread, charts.pairs([("x", 1.0, 1.0)])):
        positions = sorted(float(x) for x, _ in re.findall(r'class="tick" x="([\d.]+)"[^>]*>([^<]*)<', svg))
        assert all(b - a >= charts.LABEL_GAP for a, b in itertools.pairwise(positions)), svg


def test_the_run_page_shows_which_parameter_moved_the_time() -> None:
    from kerntune.report.importance import parameter_importance, varying
    from kerntune.report.page import fields

    rows = [
        ({"BLOCK": b, "WARPS": w, "STAGES": st}, 8.0 / b + (0.001 * st))
        for b in (16, 32, 64, 128)
        for w in (2, 4)
        for st in (2, 3)
    ]
    importance = parameter_importance(rows)
    assert importance is not None and max(importance, key=importance.__getitem__) == "BLOCK"
    assert abs(sum(importance.values()) - 1) < 1e-6
    assert parameter_importance(rows[:4]) is None  # four configs rank nothing
    svg = charts.parameters(rows, varying(rows), importance)
    assert svg.index('data-parameter="BLOCK"') < svg.index('data-parameter="STAGES"')  # most important first
    assert 'data-parameter="BLOCK" data-value="128" data-best-ms="0.0645"' in svg
    assert "<th></th>" not in fields([("run", "r1")], "run") and '<th scope="row">run</th>' in fields(
        [("run", "r1")], "run"
    )


def test_the_two_parameter_grid_and_readable_type() -> None:
    import re

    from kerntune.report.verdict import speedup_text

    rows = [({"BLOCK": b, "WARPS": w}, 8.0 / b + 0.01 * w) for b in (16, 32, 64) for w in (2, 4) if (b, w) != (64, 2)]
    rows += [({"BLOCK": 16, "WARPS": 2}, 99.0)]  # a slower repeat of a pair: the cell keeps the pair's best
    svg = charts.contour(rows, ("BLOCK", [16, 32, 64]), ("WARPS", [2, 4]), "BLOCK by WARPS", {"BLOCK": 32, "WARPS": 4})
    timed = {
        (x, y): float(ms)
        for x, y, ms in re.findall(r'class="cell"[^>]*data-x="(\d+)" data-y="(\d+)" data-ms="([^"]+)"', svg)
    }
    assert timed == {("16", "2"): 0.52, ("32", "2"): 0.27, ("16", "4"): 0.54, ("32", "4"): 0.29, ("64", "4"): 0.165}
    assert svg.count('class="empty"') == 1  # BLOCK=64, WARPS=2 was never timed: grey, not a guess
    assert re.findall(r'stroke="#cc3311"[^>]*data-ms="([^"]+)"', svg) == ["0.29"]  # the winner's cell outlined
    assert charts.contour([], ("A", [1]), ("B", [1])) == ""
    sizes = {
        int(s) for s in re.findall(r'font-size="(\d+)"', svg + charts.parameters(rows, {"BLOCK": [16, 32, 64]}, None))
    }
    assert sizes and min(sizes) >= 13
    assert speedup_text(1.876, "torch") == "1.88× faster than torch"
    assert speedup_text(0.8, "cuBLAS") == "1.25× slower than cuBLAS"
    assert speedup_text(1.001, "default") == "as fast as default (1.00×)"
