"""An A/A band cut short by the budget is never kept: its two pairs' interval is the t quantile's width, which
would call a clear 11% slowdown noise and be inherited by every later run of the program."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kerntune.compare import ab
from kerntune.compare.runners import ABRequest
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.claims import ProcessRecord, noise_band


class Runner:
    def __init__(self) -> None:
        self.target = {"device_name": "dev"}
        self.shape_key = ""
        self.dtype = ""

    def work(self, index: int) -> str:
        return f"side {index}"


def records(values: list[tuple[float, float]]) -> list[ProcessRecord]:
    out = []
    for a, b in values:
        for side, value in (("A", a), ("B", b)):
            out.append(ProcessRecord(len(out), side, value, (value,), {}))
    return out


def test_a_budget_cut_calibration_is_not_the_band_and_is_not_stored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    slower = records([(3.28, 3.72), (3.27, 3.67), (3.38, 3.68), (3.32, 3.70), (3.38, 3.66), (3.32, 3.73)])
    cut = records([(3.28, 3.30), (3.50, 3.31)])  # two pairs of six: a t interval with one degree of freedom
    given = iter([slower, cut])

    def measure(*args: Any, **kwargs: Any) -> tuple[list[ProcessRecord], Runner, str]:
        return next(given), Runner(), "fresh"

    monkeypatch.setattr(ab, "_measure_pair", measure)
    store = Store(tmp_path / "store")
    request = ABRequest(a="cmd:a", b="cmd:b", processes=6, budget_s=1e6)
    record = ab.run_ab(request, Settings.from_env(), store)
    assert record.band == Settings.from_env().ab_min_band
    assert record.verdict == "loss", record.reason  # 1.11 with its interval above 1 + the floor
    assert "cut by the budget after 2 of 6 pairs, not kept" in record.reason
    scope = ab._scope(Runner(), "fresh", {})  # type: ignore[arg-type]
    assert noise_band(store, scope) is None


def test_a_whole_calibration_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    same = records([(3.30, 3.31), (3.28, 3.27), (3.31, 3.30)])
    given = iter([same, same])
    monkeypatch.setattr(ab, "_measure_pair", lambda *a, **k: (next(given), Runner(), "fresh"))
    store = Store(tmp_path / "store")
    record = ab.run_ab(ABRequest(a="cmd:a", b="cmd:b", processes=3), Settings.from_env(), store)
    assert noise_band(store, ab._scope(Runner(), "fresh", {})) is not None  # type: ignore[arg-type]
    assert "(A/A ab-" in record.reason
