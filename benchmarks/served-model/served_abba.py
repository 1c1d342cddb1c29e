"""A program with a table served against the same program without it, in fresh processes, A B B A.

    python benchmarks/served-model/served_abba.py --table T.json --pairs 5 [--out FILE.json] -- python app.py ARGS

Side A runs the program as given, side B under ``kerntune run --table T.json``; each process prints its metric
(the last ``NUMBER ms per`` line by default, ``--metric REGEX`` otherwise: its first group), lower is better.
Processes run in A B B A order, so each adjacent A–B pair shares its moment (clocks, power state, the host's
load); the ratio B/A is the geometric mean of the pairs' ratios with a Student-t interval
(``kerntune.measure.stats.ratio_ci``, what ``kerntune ab`` reports for fresh processes), beside each side's spread
over its processes. What this does not do that ``kerntune ab`` does: calibrate a noise band by an A/A run of the
same scope (which doubles the processes); the A and B spreads printed are the stand-in, and say so.
A process that exits non-zero, or prints no metric, stops the run with its output's last lines.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from kerntune.measure.stats import ratio_ci  # noqa: E402

DEFAULT_METRIC = r"([0-9.]+) ms per"


def run_for_metric(command: list[str], metric: str, timeout: float, env: dict[str, str] | None = None) -> float:
    """One fresh process's metric (``env`` added to this environment); a process that fails, prints no metric or
    runs past ``timeout`` stops the run with a one-line message."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{shlex.join(command)} ran past {timeout:g} s") from None
    found = re.findall(metric, done.stdout)
    if done.returncode != 0 or not found:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise SystemExit(
            f"{shlex.join(command)} exited {done.returncode}{'' if found else ', printing no metric'}: {tail}"
        )
    return float(found[-1])


def main() -> None:
    if "--" not in sys.argv:
        raise SystemExit("give the program after --: served_abba.py --table T.json -- python app.py ARGS")
    split = sys.argv.index("--")
    p = argparse.ArgumentParser()
    p.add_argument("--table", required=True)
    p.add_argument("--spec-dir", default="kernels", help="where the table's specs are found (kerntune run --spec-dir)")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--metric", default=DEFAULT_METRIC)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one process may take")
    p.add_argument("--out")
    args = p.parse_args(sys.argv[1:split])
    program = sys.argv[split + 1 :]
    if args.pairs < 2:
        raise SystemExit("--pairs must be at least 2: a ratio interval needs two pairs")
    served = [sys.executable, "-m", "kerntune", "run", "--table", args.table, "--spec-dir", args.spec_dir]
    sides = {"A": program, "B": [*served, "--", *program]}
    order = [side for i in range(args.pairs) for side in ("AB" if i % 2 == 0 else "BA")]
    values: list[tuple[str, float]] = []
    started = time.time()
    for side in order:
        values.append((side, run_for_metric(sides[side], args.metric, args.timeout)))
        print(f"{side} {values[-1][1]:.6g}", flush=True)
    pairs = [
        (values[2 * i][1], values[2 * i + 1][1])
        if values[2 * i][0] == "A"
        else (values[2 * i + 1][1], values[2 * i][1])
        for i in range(args.pairs)
    ]
    estimate = ratio_ci(pairs)
    a = [v for s, v in values if s == "A"]
    b = [v for s, v in values if s == "B"]
    result: dict[str, Any] = {
        "program": shlex.join(program),
        "table": args.table,
        "order": "".join(order),
        "values": values,
        "pairs": pairs,
        "ratio": estimate.ratio,
        "ci": [estimate.low, estimate.high],
        "n": estimate.n,
        "spread": {"A": (max(a) - min(a)) / statistics.median(a), "B": (max(b) - min(b)) / statistics.median(b)},
        "wall_s": round(time.time() - started, 1),
        "note": "no A/A noise band (kerntune ab calibrates one); each side's spread over its processes is given",
    }
    print(
        f"B/A {estimate.ratio:.4f} (95% CI {estimate.low:.4f}-{estimate.high:.4f}, {estimate.n} pairs, A B B A); "
        f"spread A {result['spread']['A']:.2%}, B {result['spread']['B']:.2%}"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
