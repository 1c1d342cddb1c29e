"""Warm start reads the store: the fastest full measurement of the nearest shape tuned on the same device."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from kerntune.model import Conditions, Config, Measurement, Shape
from kerntune.store import CandidateResult, Store
from kerntune.store.warm_start import nearest_winners, shape_distance
from tests.unit.store.test_store import TARGET, _run


def _timed(store: Store, run_id: str, shape: Shape, config: str, ms: float, role: str = "search") -> None:
    cid = store.start_candidate(run_id, shape, Config.of({"X": config}), role, "rung 0" if role == "screen" else "")
    store.finish_candidate(cid, CandidateResult("ok", measurement=Measurement((ms,) * 3, Conditions("t"))))


def test_the_nearest_shape_on_the_same_device_seeds_the_search(tmp_path: Path) -> None:
    store = Store(tmp_path)
    small, big, here = Shape.of({"N": 16}), Shape.of({"N": 4096}), Shape.of({"N": 2048})
    first = _run(store, "20260101-000000-aaaa")
    _timed(store, first.id, small, "a", 1.0)
    _timed(store, first.id, big, "b", 2.0)
    _timed(store, first.id, big, "c", 1.5)
    _timed(store, first.id, big, "d", 0.1, role="screen")  # a screening time is never a result
    elsewhere = replace(_run(store, "20260101-000000-bbbb"), target=replace(TARGET, device_name="other GPU"))
    store.db.execute("UPDATE runs SET target=? WHERE id=?", (json.dumps(elsewhere.target.as_dict()), elsewhere.id))
    _timed(store, elsewhere.id, here, "z", 0.01)
    seeds = nearest_winners(store, problem="p", dtype="float32", target=TARGET, shape=here, current_run="now")
    assert [(s.shape.key, s.config["X"]) for s in seeds] == [("N=4096", "c"), ("N=16", "a")]
    # Within a run: a shape finished earlier seeds the next one; the shape in progress does not seed itself.
    _timed(store, first.id, here, "e", 0.5)
    mid_run = nearest_winners(store, problem="p", dtype="float32", target=TARGET, shape=here, current_run=first.id)
    assert [(s.shape.key, s.config["X"]) for s in mid_run] == [("N=4096", "c"), ("N=16", "a")]
    later = nearest_winners(store, problem="p", dtype="float32", target=TARGET, shape=big, current_run=first.id)
    assert [(s.shape.key, s.config["X"]) for s in later] == [("N=2048", "e"), ("N=16", "a")]
    assert shape_distance({"N": 2, "K": 3}, {"N": 2, "K": 3}) == 0.0
    assert shape_distance({"N": 2, "layout": "nt"}, {"N": 2, "layout": "tn"}) == float("inf")
