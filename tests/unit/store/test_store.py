from __future__ import annotations

import math
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from kerntune.errors import StoreError
from kerntune.model import Budget, Conditions, Config, FailureKind, Measurement, Run, Shape, Target, Verdict
from kerntune.store import CandidateResult, Store

TARGET = Target("null", "none", "null-arch", "null device", 1)
SHAPE = Shape.of({"N": 16})


def _run(store: Store, run_id: str = "20260101-000000-abcd") -> Run:
    run = Run(
        id=run_id,
        problem="p",
        spec_path="/x/spec.py",
        spec_hash="h",
        target=TARGET,
        strategy="exhaustive",
        budget=Budget(5, None),
        shapes=(SHAPE,),
        dtype="float32",
        seed=0,
        created="2026-01-01T00:00:00",
    )
    store.create_run(run)
    return run


def test_run_round_trip_and_prefix_lookup(tmp_path: Path) -> None:
    store = Store(tmp_path)
    run = _run(store)
    got = store.get_run("20260101")
    assert got.id == run.id and got.target == TARGET and got.budget == Budget(5, None) and got.shapes == (SHAPE,)
    assert store.get_run("last").id == run.id
    with pytest.raises(StoreError):
        store.get_run("nope")


def test_candidate_results_and_raw_samples_persist(tmp_path: Path) -> None:
    store = Store(tmp_path)
    run = _run(store)
    config = Config.of({"B": 4})
    cid = store.start_candidate(run.id, SHAPE, config, "search", "")
    samples = (1.5, 1.25, 1.75, 1.5)
    verdict = Verdict("gate", "pass", "rel_l2", 1e-7, 1e-5, "ok")
    store.finish_candidate(
        cid, CandidateResult("ok", measurement=Measurement(samples, Conditions("t")), verdict=verdict, compile_s=0.5)
    )
    failed = store.start_candidate(run.id, SHAPE, Config.of({"B": 8}), "search", "")
    store.finish_candidate(failed, CandidateResult("failed", failure=FailureKind.HANG, reason="no answer"))
    Store(tmp_path).close()  # a second connection does not disturb the first
    cands = {c.config.key: c for c in store.candidates(run.id)}
    assert cands["B=4"].measurement is not None and cands["B=4"].measurement.samples_ms == samples
    assert cands["B=4"].verdict == verdict
    assert cands["B=8"].failure is FailureKind.HANG and cands["B=8"].measurement is None
    assert store.finished_keys(run.id) == {(SHAPE.key, "search", "", "B=4"), (SHAPE.key, "search", "", "B=8")}
    with pytest.raises(StoreError):
        store.start_candidate(run.id, SHAPE, config, "search", "")


def test_pending_row_is_reused_and_cleared(tmp_path: Path) -> None:
    store = Store(tmp_path)
    run = _run(store)
    first = store.start_candidate(run.id, SHAPE, Config.of({"B": 4}), "search", "")
    again = store.start_candidate(run.id, SHAPE, Config.of({"B": 4}), "search", "")
    assert first == again
    assert store.finished_keys(run.id) == set()


def test_unwritable_store_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(blocker / "sub")


def test_confirmation_rounds_pool_and_rank_the_winner(tmp_path: Path) -> None:
    from kerntune.report.summary import build_report

    store = Store(tmp_path)
    run = _run(store)
    ids = {}
    for name, search in (("A", 1.0), ("B", 1.5)):
        cid = store.start_candidate(run.id, SHAPE, Config.of({"X": name}), "search", "")
        store.finish_candidate(cid, CandidateResult("ok", measurement=Measurement((search,) * 3, Conditions("t"))))
        ids[name] = cid
    fresh = Conditions("t", fresh_process=True)
    store.add_confirmation(ids["A"], Measurement((2.0, 2.2), fresh), 0)
    store.add_confirmation(ids["A"], Measurement((2.1,), fresh), 1)
    store.add_confirmation(ids["B"], Measurement((1.4, 1.4), fresh), 0)
    assert store.confirmed_rounds(ids["A"]) == {0, 1}
    cands = {c.config["X"]: c for c in store.candidates(run.id)}
    assert cands["A"].confirmed is not None and cands["A"].confirmed.samples_ms == (2.0, 2.2, 2.1)
    assert cands["A"].measurement is not None and cands["A"].measurement.samples_ms == (1.0, 1.0, 1.0)
    report = build_report(store, store.get_run(run.id)).shapes[0]
    assert report.winner is not None and report.winner.config["X"] == "B"  # confirmed beats search-time
    assert report.speedup_over(cands["A"]) == pytest.approx(2.1 / 1.4)
    store.fail_candidate(ids["B"], FailureKind.WRONG, "failed in confirmation round 2: relative error")
    report = build_report(store, store.get_run(run.id)).shapes[0]
    assert report.winner is not None and report.winner.config["X"] == "A"


def test_no_nan_or_infinity_reaches_the_stores_json(tmp_path: Path) -> None:
    """A record holding one is refused by name with nothing written; a reading holding one is kept as null; every
    JSON column then passes SQLite's own json_valid (which refuses the text NaN)."""
    store = Store(tmp_path)
    run = _run(store)
    refused = {
        r"the run's options target_ms is nan": lambda: store.create_run(
            replace(run, id="20260101-000000-nnnn", options={"target_ms": math.nan})
        ),
        r"the run's shapes \[0\]\.N is inf": lambda: store.create_run(
            replace(run, id="20260101-000000-iiii", shapes=(Shape.of({"N": math.inf}),))
        ),
        r"the run's option phases worker:search_s is inf": lambda: store.set_run_option(
            run.id, "phases", "worker:search_s", math.inf
        ),
        r"the candidate's config B is -inf": lambda: store.start_candidate(
            run.id, SHAPE, Config.of({"B": -math.inf}), "search", ""
        ),
    }
    for message, write in refused.items():
        with pytest.raises(StoreError, match=message + r", and the store keeps no NaN or infinity"):
            write()
    assert [r.id for r in store.runs()] == [run.id] and store.candidates(run.id) == []
    cid = store.start_candidate(run.id, SHAPE, Config.of({"B": 4}), "search", "")
    telemetry = {"temperature_c": math.inf, "sm_clock_mhz": 1980.0}
    store.finish_candidate(
        cid,
        CandidateResult(
            "ok",
            resources={"registers": math.nan},
            measurement=Measurement((1.0, 1.1), Conditions("t", telemetry=telemetry)),
            verdict=Verdict("gate", "pass", "rel_l2", 1e-7, 1e-5, "ok", {"worst": math.nan}),
        ),
    )
    (found,) = store.candidates(run.id)
    assert found.resources == {"registers": None} and found.verdict is not None
    assert found.verdict.details == {"worst": None} and found.measurement is not None
    assert found.measurement.conditions.telemetry == {"temperature_c": None, "sm_clock_mhz": 1980.0}
    with sqlite3.connect(tmp_path / "kerntune.sqlite") as conn:
        for table, column in (
            ("runs", "target"),
            ("runs", "budget"),
            ("runs", "shapes"),
            ("runs", "options"),
            ("candidates", "shape"),
            ("candidates", "config"),
            ("candidates", "resources"),
            ("verdicts", "details"),
            ("measurements", "conditions"),
        ):
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE NOT json_valid({column})").fetchone() == (0,)
