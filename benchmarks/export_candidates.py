"""Export a store's candidates (one row per evaluation, with start and finish times and the search-time median)
as CSV, and print the configs-per-minute summary; a device call's SQLite store is too large to bring back.

Usage: python3 benchmarks/export_candidates.py STORE_FOLDER OUT.csv
"""

from __future__ import annotations

import csv
import sqlite3
import statistics
import sys

WALL = ("warm_up", "sampling", "bookkeeping", "reads")
"""Conditions.wall_ms of the search measurement: where its wall time went (empty for stores from before it)."""
_LATEST = (
    "(SELECT {} FROM measurements m WHERE m.candidate_id = c.id AND m.phase = 'search' ORDER BY m.id DESC LIMIT 1)"
)
QUERY = (
    "SELECT c.id, c.shape_key, c.role, c.label, c.config_key, c.status, c.failure, c.compile_s, c.gate_s,"
    " c.measure_s, c.started, c.finished, "
    + _LATEST.format("median_ms")
    + ", "
    + ", ".join(_LATEST.format(f"json_extract(m.conditions, '$.wall_ms.{key}')") for key in WALL)
    + " FROM candidates c ORDER BY c.id"
)
HEADER = [
    "id",
    "shape",
    "role",
    "label",
    "config",
    "status",
    "failure",
    "compile_s",
    "gate_s",
    "measure_s",
    "started",
    "finished",
    "median_ms",
    *(f"{key}_ms" if key != "reads" else "telemetry_reads" for key in WALL),
]


def main(store: str, out: str) -> None:
    rows = sqlite3.connect(f"{store}/kerntune.sqlite").execute(QUERY).fetchall()
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(rows)
    search = [r for r in rows if r[2] != "baseline" and r[10] is not None and r[11] is not None]
    if not search:
        print(f"{out}: no search candidates")
        return
    configs = {r[4] for r in search}
    span = max(r[11] for r in search) - min(r[10] for r in search)
    print(
        f"{out}: {len(configs)} configs, {len(search)} evaluations in {span:.1f} s of search "
        f"= {60 * len(configs) / max(span, 1e-9):.1f} configs/min; compile {sum(r[7] or 0 for r in search):.1f} s"
        f" summed, gate {sum(r[8] or 0 for r in search):.1f} s, measure {sum(r[9] or 0 for r in search):.1f} s"
    )
    split = [r for r in search if r[2] == "screen" and r[HEADER.index("sampling_ms")] is not None]
    if split:  # where a screen's wall time went, medians over the screens

        def median(name: str) -> float:
            return statistics.median(float(r[HEADER.index(name)]) for r in split)

        print(
            f"  screens ({len(split)}, medians): warm-up {median('warm_up_ms'):.1f} ms, sampling "
            f"{median('sampling_ms'):.1f} ms, the host's bookkeeping within them {median('bookkeeping_ms'):.1f} ms "
            f"({median('telemetry_reads'):.0f} telemetry reads); worker's measure_s "
            f"{1e3 * median('measure_s'):.1f} ms"
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
