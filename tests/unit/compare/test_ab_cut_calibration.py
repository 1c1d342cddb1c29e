"""An A/A band cut short by the budget is never kept: its two pairs' interval is the t quantile's width, which
would call a clear 11% slowdown noise and be inherited by every later run of the program."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kerntune.compare import ab, sequence
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

    monkeypatch.setattr(ab, "measure_pair", measure)
    store = Store(tmp_path / "store")
    request = ABRequest(a="cmd:a", b="cmd:b", processes=6, budget_s=1e6)
    record = ab.run_ab(request, Settings.from_env(), store)
    assert record.band == Settings.from_env().ab_min_band
    assert record.verdict == "loss", record.reason  # 1.11 with its interval above 1 + the floor
    assert "cut by the budget after 2 of 6 pairs, not kept" in record.reason
    scope = sequence.band_scope(Runner(), "fresh", {})  # type: ignore[arg-type]
    assert noise_band(store, scope) is None


def test_a_whole_calibration_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    same = records([(3.30, 3.31), (3.28, 3.27), (3.31, 3.30)])
    given = iter([same, same])
    monkeypatch.setattr(ab, "measure_pair", lambda *a, **k: (next(given), Runner(), "fresh"))
    store = Store(tmp_path / "store")
    record = ab.run_ab(ABRequest(a="cmd:a", b="cmd:b", processes=3), Settings.from_env(), store)
    assert noise_band(store, sequence.band_scope(Runner(), "fresh", {})) is not None  # type: ignore[arg-type]
    assert "(A/A ab-" in record.reason


def test_an_aa_the_budget_cannot_hold_is_not_started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = []

    def measure(*args: Any, **kwargs: Any) -> tuple[list[ProcessRecord], Runner, str]:
        calls.append(args[6])  # the label: "A/B" or "A/A"
        time.sleep(0.2)  # three pairs in 0.2 s: an A/A of three pairs needs about 0.2 s more
        return records([(3.3, 3.7), (3.3, 3.7), (3.4, 3.7)]), Runner(), "fresh"

    monkeypatch.setattr(ab, "measure_pair", measure)
    request = ABRequest(a="cmd:a", b="cmd:b", processes=3, budget_s=0.3)
    record = ab.run_ab(request, Settings.from_env(), Store(tmp_path / "store"))
    assert calls == ["A/B"]  # no A/A started past what the budget holds
    assert "none: the budget ended first" in record.reason and record.band == Settings.from_env().ab_min_band


def test_a_cut_recalibration_keeps_the_stored_band(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kerntune.store.claims import set_noise_band

    store = Store(tmp_path / "store")
    set_noise_band(store, sequence.band_scope(Runner(), "fresh", {}), 0.03, "ab-stored")  # type: ignore[arg-type]
    given = iter([records([(3.3, 3.7), (3.3, 3.7), (3.4, 3.7)]), records([(3.3, 3.3), (3.5, 3.3)])])
    monkeypatch.setattr(ab, "measure_pair", lambda *a, **k: (next(given), Runner(), "fresh"))
    request = ABRequest(a="cmd:a", b="cmd:b", processes=3, recalibrate=True, budget_s=1e6)
    record = ab.run_ab(request, Settings.from_env(), store)
    assert record.band == 0.03 and "ab-stored" in record.reason and "not kept" in record.reason


def test_a_pair_the_budget_cannot_hold_is_not_started(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]

    class Timed(Runner):
        def value(self, index: int) -> tuple[float, tuple[float, ...], dict[str, Any]]:
            clock[0] += 10.0  # every process takes 10 s of the fake clock
            return 3.3, (3.3,), {}

    monkeypatch.setattr(sequence.time, "perf_counter", lambda: clock[0])
    taken = sequence.run_sequence(Timed(), 10, sequence.Quiet(), "A/B", deadline=65.0)  # type: ignore[arg-type]
    assert len(taken) == 6 and clock[0] <= 65.0  # a fourth pair would end at 80 s
    clock[0] = 0.0
    least = sequence.run_sequence(Timed(), 10, sequence.Quiet(), "A/B", deadline=5.0)  # type: ignore[arg-type]
    assert len(least) == 4  # two pairs, the fewest an interval needs, whatever the budget


def test_an_undecided_ab_the_budget_stops_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kerntune.store.claims import set_noise_band

    store = Store(tmp_path / "store")
    set_noise_band(store, sequence.band_scope(Runner(), "fresh", {}), 0.02, "ab-stored")  # type: ignore[arg-type]
    labels = []

    def measure(*args: Any, **kwargs: Any) -> tuple[list[ProcessRecord], Runner, str]:
        labels.append(args[6])
        time.sleep(0.2)  # three pairs in 0.2 s: more values need about 0.13 s
        return records([(3.3, 3.25), (3.3, 3.40), (3.4, 3.31)]), Runner(), "fresh"  # across the band's edges

    monkeypatch.setattr(ab, "measure_pair", measure)
    request = ABRequest(a="cmd:a", b="cmd:b", processes=3, budget_s=0.25)
    record = ab.run_ab(request, Settings.from_env(), store)
    assert labels == ["A/B"]  # every pair asked for was taken, but no time is left for more
    assert "the budget of 0.25 s ended" in record.reason, record.reason
