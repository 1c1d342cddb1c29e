"""False wins and power of ``kerntune ab``: N A/A verdicts and M planted-slowdown verdicts, at default
settings, through the real CLI (one ``kerntune ab --json`` per verdict). Writes one JSON line per verdict
as it finishes (a cut-short run keeps what it did) and a summary at the end.

    python benchmarks/measurement-trust/ab_power.py --spec examples/opencl_planted_slowdown --slow-a @ITERS=200 \\
        --slow-b @ITERS=206 --aa 50 --slow 20 --out ab_power.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path


def one(args: list[str], env: dict[str, str]) -> dict[str, object]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kerntune", "ab", *args, "--json"], capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        return {"verdict": "error", "wall_s": wall, "stderr": proc.stderr[-400:]}
    data = json.loads(proc.stdout)
    return {
        "verdict": data["verdict"],
        "ratio": data["ratio"],
        "ci": [data["ci_low"], data["ci_high"]],
        "band": data["band"],
        "scheme": data["scheme"],
        "wall_s": wall,
        "ab_wall_s": data["wall_s"],
        "id": data["id"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--slow-a", required=True)
    parser.add_argument("--slow-b", required=True)
    parser.add_argument("--aa", type=int, default=20)
    parser.add_argument("--slow", type=int, default=10)
    parser.add_argument("--scheme", default="auto")
    parser.add_argument("--reference", default="default", help="what fresh processes time beside each side")
    parser.add_argument("--processes", type=int, default=0, help="values per side (0: kerntune's default)")
    parser.add_argument(
        "--twin",
        default="",
        help="an A/A compares --slow-a with this side (the same code in another file) instead of the spec with itself",
    )
    parser.add_argument(
        "--no-calibration",
        action="store_true",
        help="skip the calibration verdicts: the store "
        "already holds the bands (a second run of the same step on the same machine)",
    )
    parser.add_argument("--store", default=".kerntune-ab-power")
    parser.add_argument("--out", default="ab_power.jsonl")
    opts = parser.parse_args()
    env = {**os.environ, "KERNTUNE_HOME": opts.store}
    scheme = ["--scheme", opts.scheme, "--reference", opts.reference]
    if opts.processes:
        scheme += ["--processes", str(opts.processes)]
    # One calibration each first (the A/A that sets the band), so every counted verdict uses a stored band; with
    # no A/A verdicts asked, only the planted side's scope needs one (a fresh-process verdict costs ~85 s on the
    # H200: a calibration nothing counts is not run).
    aa = ["--spec", opts.spec, opts.slow_a, opts.twin] if opts.twin else [opts.spec, opts.spec]
    plan = (
        []
        if opts.no_calibration
        else [
            *([("calibrate-aa", [*aa, *scheme])] if opts.aa else []),
            ("calibrate-slow", ["--spec", opts.spec, opts.slow_a, opts.slow_a, *scheme]),
        ]
    )
    plan += [("aa", [*aa, *scheme])] * opts.aa
    plan += [("slow", ["--spec", opts.spec, opts.slow_a, opts.slow_b, *scheme])] * opts.slow
    counts: dict[str, Counter[str]] = {"aa": Counter(), "slow": Counter()}
    walls: dict[str, list[float]] = {"aa": [], "slow": []}
    with Path(opts.out).open("a") as out:
        for kind, args in plan:
            result = {"kind": kind, **one(args, env)}
            out.write(json.dumps(result) + "\n")
            out.flush()
            print(json.dumps(result), flush=True)
            if kind in counts:
                counts[kind][str(result["verdict"])] += 1
                walls[kind].append(float(result["wall_s"]))  # type: ignore[arg-type]
        summary = {
            "kind": "summary",
            "aa": dict(counts["aa"]),
            "slow": dict(counts["slow"]),
            "median_wall_s": {k: sorted(v)[len(v) // 2] for k, v in walls.items() if v},
        }
        out.write(json.dumps(summary) + "\n")
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
