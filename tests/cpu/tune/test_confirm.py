"""Finalists and baselines are re-timed in fresh processes, interleaved, before a winner is declared."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, CliResult

pytest.importorskip("pyopencl")


def test_finalists_are_confirmed_in_fresh_processes_in_alternating_order(
    tmp_path: Path, kerntune: Callable[..., CliResult]
) -> None:
    result = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=65536", "--json",
                      env={"KERNTUNE_FINALISTS": "2", "KERNTUNE_CONFIRM_ROUNDS": "2"})
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    winner = shape["winner"]
    assert winner["confirmed"]["conditions"]["fresh_process"] is True
    assert winner["measurement"]["conditions"]["fresh_process"] is False
    default = next(b for b in shape["baselines"] if b["label"] == "default")
    assert "confirmed" in default  # the baseline is re-timed beside the finalists

    with sqlite3.connect(tmp_path / "store" / "kerntune.sqlite") as db:
        rows = db.execute("SELECT round, candidate_id, n FROM measurements WHERE phase='confirm'"
                          " ORDER BY round, id").fetchall()
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

    result = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=65536", "--json",
                      env={"KERNTUNE_FINALISTS": "3", "KERNTUNE_CONFIRM_ROUNDS": "2"})
    assert result.code == 0, result.stderr
    shape = result.json()["shapes"][0]
    assert "default" in shape["reference"]  # no library baseline in this spec: its default config
    finalists = shape["finalists"]
    ratios = [f["interleaved_ratio"]["ratio"] for f in finalists]
    assert ratios == sorted(ratios)  # ranked by the interleaved ratio, fastest first
    assert all(f["interleaved_ratio"]["rounds"] == 2 for f in finalists)
    default = next(b for b in shape["baselines"] if b["label"] == "default")
    winner_ratio = shape["interleaved"][str(shape["winner"]["id"])]["ratio"]
    assert abs(default["winner_speedup"] - 1 / winner_ratio) < 1e-9  # the speedup is the interleaved ratio's
    with sqlite3.connect(tmp_path / "store" / "kerntune.sqlite") as db:
        rows = db.execute("SELECT candidate_id, conditions FROM measurements WHERE phase='confirm'").fetchall()
    paired = [json.loads(c)["telemetry"].get("paired") for cid, c in rows if cid != default["id"]]
    assert paired and all(p and p["reference"] == default["id"] and p["pairs"] > 0 for p in paired)
