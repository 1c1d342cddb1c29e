"""Train and score a table offline from a sweep exported by ``export_candidates.py`` (a CSV of every timed
candidate), with the same functions ``kerntune train`` uses: how segment choices (``--by``) change held-out
regret on one measured sweep. Nothing is timed here; every time is a median the sweep measured.

    python3 benchmarks/table-quality/train_from_csv.py \\
        benchmarks/data/table-quality/2026-11-29/sweep-64-shapes/candidates.csv [--by M --by N/K ...]
"""

from __future__ import annotations

import argparse
import csv
import json
from typing import Any

from kerntune.deploy.train import ShapeTimes, TrainOptions, complete, fit_table


def _fields(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in filter(None, text.split(",")):
        name, value = part.split("=")
        out[name] = int(value) if value.lstrip("-").isdigit() else value
    return out


def load(path: str) -> tuple[list[ShapeTimes], dict[str, dict[str, Any]]]:
    shapes: dict[str, ShapeTimes] = {}
    configs: dict[str, dict[str, Any]] = {}
    with open(path) as handle:
        for row in csv.DictReader(handle):
            if row["status"] != "ok" or row["role"] == "screen" or not row["config"] or not row["median_ms"]:
                continue
            s = shapes.setdefault(row["shape"], ShapeTimes(_fields(row["shape"])))
            configs[row["config"]] = _fields(row["config"])
            s.times[row["config"]] = min(s.times.get(row["config"], float("inf")), float(row["median_ms"]))
    return complete(list(shapes.values())), configs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--by", action="append", default=[])
    parser.add_argument("--holdout-every", type=int, default=3)
    parser.add_argument("--noise", type=float, default=0.02)
    args = parser.parse_args()
    shapes, configs = load(args.csv)
    options = TrainOptions(holdout_every=args.holdout_every, noise=args.noise, by=tuple(args.by))
    fitted = fit_table(shapes, configs, {"op": "offline"}, {"schema": 1}, options)
    report = fitted["report"]
    held = report.pop("held_out") or {}
    print(
        json.dumps(
            {
                "by": fitted["table"]["training"]["by"],
                **report,
                "held_out": {k: v for k, v in held.items() if k != "rows"},
                "held_out_rows": [
                    (r["shape"], round(r["regret"], 4) if r["regret"] is not None else None)
                    for r in held.get("rows", [])
                ],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
