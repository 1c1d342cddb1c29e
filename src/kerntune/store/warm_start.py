"""Warm start: the winner of the nearest shape already tuned for the same problem, dtype and device.

A search that begins at a config which won at a neighbouring shape (or at this shape in an earlier run)
reaches a good region sooner than one that begins at the spec's default. Only full-protocol measurements count
(never a screening time), and only from the same device name and architecture."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

from kerntune.model import Config, Scalar, Shape, Target
from kerntune.store.sqlite import Store


@dataclass(frozen=True)
class Seed:
    shape: Shape
    config: Config
    median_ms: float
    run_id: str


def shape_distance(a: Mapping[str, Scalar], b: Mapping[str, Scalar]) -> float:
    """Sum of |log(a/b)| over the positive numeric fields both shapes have (inf when a field differs in kind)."""
    total = 0.0
    for name in set(a) | set(b):
        x, y = a.get(name), b.get(name)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x > 0 and y > 0:
            total += abs(math.log(x / y))
        elif x != y:
            return math.inf
    return total


def nearest_winners(
    store: Store, *, problem: str, dtype: str, target: Target, shape: Shape, current_run: str
) -> list[Seed]:
    """Each tuned shape's fastest full measurement, nearest shape first (this shape itself, if tuned before).
    Shapes the current run finished earlier count (a run over many shapes seeds each from its neighbours); the
    shape being searched in the current run does not."""
    rows = store.db.execute(
        "SELECT r.id, r.target, c.shape, c.config, m.median_ms FROM candidates c JOIN runs r ON r.id = c.run_id"
        " JOIN measurements m ON m.candidate_id = c.id WHERE r.problem = ? AND r.dtype = ?"
        " AND c.role = 'search' AND c.status = 'ok' AND m.phase = 'search'",
        (problem, dtype),
    ).fetchall()
    best: dict[str, Seed] = {}
    for run_id, target_json, shape_json, config_json, median in rows:
        other = json.loads(target_json)
        if other.get("device_name") != target.device_name or other.get("arch") != target.arch:
            continue
        seen = Shape.of(json.loads(shape_json))
        if run_id == current_run and seen.key == shape.key:
            continue
        if seen.key not in best or median < best[seen.key].median_ms:
            best[seen.key] = Seed(seen, Config.of(json.loads(config_json)), float(median), str(run_id))
    here = shape.as_dict()
    ranked = sorted(best.values(), key=lambda s: shape_distance(here, s.shape.as_dict()))
    return [s for s in ranked if math.isfinite(shape_distance(here, s.shape.as_dict()))]
