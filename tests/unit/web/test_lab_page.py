"""The lab page's account of a capture's history: replay medians by mode, every comparison with both timers, the
fastest correct one marked, the saves."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi")


def _compare(ratio: float, passed: bool, block: int) -> dict[str, object]:
    return {
        "job": "compare",
        "spec": "kernels/triton_gemm",
        "overrides": {"BLOCK_N": block},
        "ratio": ratio,
        "validation": {"passed": passed, "rule": "bitwise", **({} if passed else {"argument": "c"})},
        "interleaved": {
            "ci": [ratio - 0.01, ratio + 0.01],
            "pairs": 100,
            "second_timer": {"ratio": ratio + 0.002, "ci": [ratio - 0.01, ratio + 0.012], "agrees": True},
        },
    }


def test_the_lab_page_marks_the_fastest_comparison_that_passed_and_lists_saves() -> None:
    from kerntune.web.pages import lab_page

    history = [
        {"job": "replay", "mode": "isolated", "median_ms": 0.07669},
        {"job": "replay", "mode": "replays", "median_ms": 0.07735, "spread": 0.0186},
        _compare(0.90, False, 16),  # fastest of all, but wrong: never marked
        _compare(0.954, True, 64),
        _compare(0.989, True, 32),
        {"job": "save", "saved": 'wrote {"BLOCK_N": 64} into served.json'},
    ]
    html = lab_page([{"name": "mm-1", "kernel": "aten::mm", "history": history}])
    assert "replay medians: isolated 76.69 µs · replays 77.35 µs, spread 1.9%" in html
    rows = re.findall(r"<tr>(.*?)</tr>", html.split('class="comparisons"', 1)[1])
    marked = [r for r in rows if "<b>fastest</b>" in r]
    assert len(marked) == 1 and "BLOCK_N=64" in marked[0] and "0.954 (0.944–0.964)" in marked[0]
    assert any("FAILED c" in r and "0.900" in r for r in rows)
    assert "0.956 (0.944–0.966)" in marked[0]  # the profiler's ratio beside the events'
    assert "saved: wrote {&quot;BLOCK_N&quot;: 64} into served.json" in html
