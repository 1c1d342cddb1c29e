"""Finalists and baselines are re-timed in fresh processes, interleaved, before a winner is declared."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, CliResult

pytest.importorskip("pyopencl")

FAST = {"KERNTUNE_WARMUP_MS": "20", "KERNTUNE_SAMPLE_BUDGET_MS": "80", "KERNTUNE_MIN_SAMPLES": "5"}


def test_finalists_are_confirmed_in_fresh_processes_in_alternating_order(
    tmp_path: Path, kerntune: Callable[..., CliResult]
) -> None:
    result = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shape",
        "N=65536",
        "--json",
        env={"KERNTUNE_FINALISTS": "2", "KERNTUNE_CONFIRM_ROUNDS": "2", "KERNTUNE_CONFIRM_BAND": "0"},
    )
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    winner = shape["winner"]
    assert winner["confirmed"]["conditions"]["fresh_process"] is True
    assert winner["measurement"]["conditions"]["fresh_process"] is False
    default = next(b for b in shape["baselines"] if b["label"] == "default")
    assert "confirmed" in default  # the baseline is re-timed beside the finalists

    with sqlite3.connect(tmp_path / "store" / "kerntune.sqlite") as db:
        rows = db.execute(
            "SELECT round, candidate_id, n FROM measurements WHERE phase='confirm' ORDER BY round, id"
        ).fetchall()
        search_n = dict(db.execute("SELECT candidate_id, n FROM measurements WHERE phase='search'").fetchall())
    by_round = {r: [cid for rr, cid, _ in rows if rr == r] for r in (0, 1)}
    assert len(by_round[0]) == 3 and by_round[1] == by_round[0][::-1]  # 2 finalists + default, ABBA order
    assert winner["id"] in by_round[0]
    pooled = sum(n for _, cid, n in rows if cid == winner["id"])
    assert winner["confirmed"]["n"] == pooled and winner["measurement"]["n"] == search_n[winner["id"]]


def test_finalists_are_ranked_by_ratios_timed_beside_the_reference(
    tmp_path: Path, kerntune: Callable[..., CliResult]
) -> None:
    import json

    result = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shape",
        "N=65536",
        "--json",
        env={"KERNTUNE_FINALISTS": "3", "KERNTUNE_CONFIRM_ROUNDS": "2", "KERNTUNE_CONFIRM_BAND": "0"},
    )
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    assert "default" in shape["reference"]  # no library baseline in this spec: its default config
    finalists = shape["finalists"]
    ratios = [f["interleaved_ratio"]["ratio"] for f in finalists]
    assert ratios == sorted(ratios)  # ranked by the interleaved ratio, fastest first
    assert all(f["interleaved_ratio"]["rounds"] == 2 for f in finalists)
    # Each finalist timed beside the reference was timed again by the host clock, both ratios reported.
    checked = [f["second_timer"] for f in finalists if f["name"] != shape["reference"]]
    assert checked and all(c and c["rounds"] == 2 and c["ratio"] > 0 and c["events_ratio"] > 0 for c in checked)
    default = next(b for b in shape["baselines"] if b["label"] == "default")
    winner_ratio = shape["interleaved"][str(shape["winner"]["id"])]["ratio"]
    assert abs(default["winner_speedup"] - 1 / winner_ratio) < 1e-9  # the speedup is the interleaved ratio's
    with sqlite3.connect(tmp_path / "store" / "kerntune.sqlite") as db:
        rows = db.execute("SELECT candidate_id, conditions FROM measurements WHERE phase='confirm'").fetchall()
    paired = [json.loads(c)["telemetry"].get("paired") for cid, c in rows if cid != default["id"]]
    assert paired and all(p and p["reference"] == default["id"] and p["pairs"] > 0 for p in paired)


def test_after_the_first_round_only_finalists_close_to_the_best_are_re_timed(
    tmp_path: Path, kerntune: Callable[..., CliResult]
) -> None:
    import json
    import math

    result = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shape",
        "N=65536",
        "--json",
        env={"KERNTUNE_FINALISTS": "8", "KERNTUNE_CONFIRM_ROUNDS": "3", **FAST},
    )
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    searched = {f["id"]: f for f in shape["finalists"] if f["role"] == "search"}
    with sqlite3.connect(tmp_path / "store" / "kerntune.sqlite") as db:
        rows = db.execute("SELECT candidate_id, round, conditions FROM measurements WHERE phase='confirm'").fetchall()
    first = {cid: json.loads(c)["telemetry"]["paired"]["log_ratio"] for cid, r, c in rows if r == 0 and cid in searched}
    rounds = {cid: sum(1 for c, _, _ in rows if c == cid) for cid in searched}
    best = min(first.values())
    behind = {cid for cid, v in first.items() if math.exp(v - best) - 1 > 0.03}
    assert behind, first  # the space's slow configs are among eight finalists
    # A clear loser after round 1 keeps that round only; the others are re-timed (round 3 may drop one that fell
    # behind over two rounds).
    wrong = {
        cid: (rounds[cid], first.get(cid))
        for cid in searched
        if (rounds[cid] != 1 if cid in behind else rounds[cid] < 2)
    }
    assert not wrong, f"rounds, first-round log ratio: {wrong}; best {best}; all rounds {rounds}; first {first}"
    skipped = [json.loads(line) for line in result.stderr.splitlines() if '"skipped"' in line]
    assert len(skipped) >= 2 * len(behind) and all("not re-timed" in e["detail"] for e in skipped)
    default = next(b for b in shape["baselines"] if b["label"] == "default")
    assert sum(1 for c, _, _ in rows if c == default["id"]) == 3  # the reference: every round


def test_a_time_budget_bounds_the_whole_run_confirmation_included(
    tmp_path: Path, kerntune: Callable[..., CliResult]
) -> None:
    import json
    import time

    began = time.monotonic()
    result = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shape",
        "N=65536",
        "--shape",
        "N=262144",
        "--budget",
        "6s/shape",
        "--json",
        env={"KERNTUNE_CONFIRM_ROUNDS": "3", **FAST},
    )
    wall = time.monotonic() - began
    assert result.code == 0, result.stderr
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith('{"event"')]
    planned, *finished = events
    assert planned["event"] == "planned" and planned["shapes"] == 2
    assert planned["estimate"] == {
        "run_s": 12.0,
        "search_s": 9.0,
        "confirm_s": 3.0,  # a quarter to confirm
        "basis": "budget",
    }
    assert finished and all(e["event"] == "finished" for e in finished)
    assert [e["done"] for e in finished] == list(range(1, len(finished) + 1))
    run = result.json()["run"]
    phases = {name.split(":")[1]: seconds for name, seconds in run["phases"].items()}
    assert set(phases) == {"start_up_s", "pool_start_s", "search_s", "confirm_s"} and phases["confirm_s"] > 0
    assert phases["pool_start_s"] == 0  # a CPU device has no compile pool to wait for
    # Per shape: the run's 12 s count from the first shape (start-up apart); each step began only where its
    # likely cost fitted, and a comparison still running at the bound is stopped there.
    # The margins are a loaded 2-core CI box's: a comparison stopped at the bound is a worker killed and reaped.
    said = f"phases {phases}, last events {finished[-3:]}, wall {wall:.1f} s"
    assert phases["search_s"] + phases["confirm_s"] <= 12.0 + 1.0, said
    assert finished[-1]["elapsed_s"] <= phases["start_up_s"] + 12.0 + 2.5, said
    assert wall <= phases["start_up_s"] + 12.0 + 10.0, said  # the interpreter's own start and the report besides
    shapes = result.json()["shapes"]
    # Every shape confirmed at least once — or, where a loaded host's costs outgrew the quarter kept for it (seen on
    # a CI box: 1 of 18 comparisons fitted), the run names the shapes it left unconfirmed.
    unconfirmed = [s["shape"] for s in shapes if "confirmed" not in s["winner"]]
    for shape in unconfirmed:
        assert (
            "left unconfirmed: " in run["stop_reason"]
            and ",".join(f"{k}={v}" for k, v in shape.items()) in run["stop_reason"]
        ), (shape, run["stop_reason"])
    # (On this project's 2-core VM a first comparison in a new PoCL worker, two builds and both timers, takes
    # ~4.6 s of the 3 s kept for confirmation: whether it fits varies run to run; the bound and the naming do not.)
    if any(e["label"] == "confirmation" and e["status"] == "cut" for e in finished):
        assert "confirmation cut to fit the time budget" in run["stop_reason"]
