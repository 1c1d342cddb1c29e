"""Tuning reproducibility as a measured property: the same shapes tuned N times, each run's winner scored
against an interleaved oracle of every finalist any run found.

    python benchmarks/measurement-trust/tune_reproducibility.py --spec SPEC --shape M=64,N=64,K=64 [--shape ...] \\
        [--repeats 5] [--budget 5s/shape] [--dtype D] [--oracle profiler|ab] [--runs-from JSON] --out DIR

1. ``kerntune tune SPEC --shape ... --budget B --json``, REPEATS times, each with a fresh store (no run sees
   another's results) — each run's winner, finalists and three runners-up (by search median) per shape: a short
   budget confirms few finalists, and the oracle should see what came close.
2. The oracle, per shape: every distinct winner and finalist of all runs, each timed against the first run's
   winner, interleaved call by call. On a CUDA device (``--oracle profiler``, the default there) by the
   profiler's kernel records in this process, as benchmarks/measurement-trust/claims_check.py times (BLOCKS blocks of
   first, other, other, first, a 256 MiB fill before every call; the median block ratio with a bootstrap 95% interval;
   the noise band the reach of an A/A of the first against itself, at least 1%) — independent of kerntune's
   measurement code, and a few seconds a candidate. Elsewhere (``--oracle ab``) by ``kerntune ab --scheme
   in-process`` (both configs compiled into one worker and timed interleaved launch by launch, A B B A, the same
   flush; ratio with its 95% interval and the A/A noise band). The oracle's best is the lowest ratio.
3. Per run and shape: the regret, ratio(its winner) / ratio(oracle best) − 1, and a flip when its winner is not
   the oracle's best and its regret is beyond the noise band (a different winner by more than noise; two winners
   within noise of each other are the same answer).
Writes DIR/reproducibility.json as each step finishes and prints the flip rate (flips over runs × shapes), the
median and worst regret, and each run's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _kerntune(args: list[str], home: Path, limit_s: float) -> tuple[int, str, str]:
    env = {**os.environ, "KERNTUNE_HOME": str(home)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kerntune", *args], capture_output=True, text=True, env=env, timeout=limit_s
        )
    except subprocess.TimeoutExpired:
        return 124, "", f"ran past {limit_s:g} s"
    return done.returncode, done.stdout, done.stderr


def _config_arg(config: dict[str, Any]) -> str:
    return "@" + ",".join(f"{k}={v}" for k, v in sorted(config.items()))


def _shape_arg(shape: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def _tune(opts: argparse.Namespace, run: int) -> dict[str, Any]:
    args = ["tune", opts.spec, *[a for s in opts.shape for a in ("--shape", s)], "--budget", opts.budget, "--json"]
    if opts.dtype:
        args += ["--dtype", opts.dtype]
    began = time.perf_counter()
    code, out, err = _kerntune(args, opts.out / f"store-{run}", opts.tune_limit)
    wall = time.perf_counter() - began
    if code != 0:
        return {"run": run, "wall_s": wall, "error": f"exit {code}: {err.strip().splitlines()[-1:]}"}
    shapes = []
    for s in json.loads(out)["shapes"]:
        winner = s.get("winner") or {}
        finalists = [
            f.get("config") for f in [*(s.get("finalists") or []), *(s.get("runners_up") or [])[:3]] if f.get("config")
        ]
        shapes.append({"shape": s["shape"], "winner": winner.get("config"), "finalists": finalists})
    return {"run": run, "wall_s": wall, "shapes": shapes}


def _oracle(opts: argparse.Namespace, shape: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """Each candidate's time ratio to the first, interleaved in one worker; the first's is 1 by definition."""
    reference, rows = candidates[0], [{"config": candidates[0], "ratio": 1.0, "ci": [1.0, 1.0]}]
    band = None
    for other in candidates[1:]:
        args = [
            "ab",
            "--spec",
            opts.spec,
            _config_arg(reference),
            _config_arg(other),
            "--shape",
            _shape_arg(shape),
            "--scheme",
            "in-process",
            "--json",
        ]
        if opts.dtype:
            args += ["--dtype", opts.dtype]
        code, out, err = _kerntune(args, opts.out / "store-oracle", opts.ab_limit)
        if code not in (0, 1):
            rows.append({"config": other, "error": f"exit {code}: {err.strip().splitlines()[-1:]}"})
            continue
        found = json.loads(out)
        band = found["band"] if band is None else max(band, found["band"])
        rows.append(
            {
                "config": other,
                "ratio": found["ratio"],
                "ci": [found["ci_low"], found["ci_high"]],
                "verdict": found["verdict"],
                "ab": found["id"],
            }
        )
    timed = [r for r in rows if "ratio" in r]
    best = min(timed, key=lambda r: r["ratio"])
    return {"candidates": rows, "best": best["config"], "best_ratio": best["ratio"], "band": band}


ORACLE_BLOCKS = 60
BAND_FLOOR = 0.01


def _oracle_profiled(
    opts: argparse.Namespace, shape: dict[str, Any], candidates: list[dict[str, Any]]
) -> dict[str, Any]:
    """``_oracle`` timed by the profiler's kernel records in this process (see the module docstring)."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from claims_check import FLUSH_BYTES, timed_blocks, warm_up

    from kerntune.tune.spec import load_spec

    problem = load_spec(Path(opts.spec)).problem
    args = problem.make_inputs({k: shape[k] for k in problem.shape_fields()}, opts.dtype or problem.dtypes[0], 1)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")

    def launch(config: dict[str, Any]) -> Any:
        return lambda: problem.kernel.launch(problem.kernel.fn, args, config)

    reference = launch(candidates[0])
    warm_up([reference])
    same = timed_blocks(reference, reference, flush, ORACLE_BLOCKS)
    band = max(BAND_FLOOR, same["ci"][1] - 1, 1 - same["ci"][0], abs(same["ratio"] - 1))
    rows: list[dict[str, Any]] = [
        {"config": candidates[0], "ratio": 1.0, "ci": [1.0, 1.0], "us": same["torch_us"], "aa": same}
    ]
    for other in candidates[1:]:
        try:
            call = launch(other)
            warm_up([call])  # compiled outside the timed blocks
            found = timed_blocks(reference, call, flush, ORACLE_BLOCKS)
        except Exception as exc:  # a candidate that no longer launches is reported, never the whole oracle lost
            rows.append({"config": other, "error": f"{type(exc).__name__}: {exc}"})
            continue
        rows.append({"config": other, "ratio": found["ratio"], "ci": found["ci"], "us": found["winner_us"]})
    best = min((r for r in rows if "ratio" in r), key=lambda r: r["ratio"])
    return {
        "candidates": rows,
        "best": best["config"],
        "best_ratio": best["ratio"],
        "band": band,
        "timer": "profiler kernel records (CUPTI), call by call",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--shape", action="append", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", default="5s/shape")
    parser.add_argument("--dtype", default="")
    parser.add_argument("--tune-limit", type=float, default=600.0)
    parser.add_argument("--ab-limit", type=float, default=300.0)
    parser.add_argument(
        "--oracle",
        choices=("profiler", "ab"),
        default="",
        help="how the oracle times (default: profiler on a CUDA device, else ab)",
    )
    parser.add_argument(
        "--runs-from",
        type=Path,
        default=None,
        help="score the tune runs of an earlier reproducibility.json instead of tuning again",
    )
    parser.add_argument("--out", type=Path, required=True)
    opts = parser.parse_args()
    if opts.runs_from and not opts.runs_from.is_file():
        parser.error(f"--runs-from {opts.runs_from}: no such file (give the reproducibility.json of an earlier run)")
    opts.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "spec": opts.spec,
        "shapes": opts.shape,
        "budget": opts.budget,
        "repeats": opts.repeats,
        "runs": [],
        "oracle": [],
    }
    path = opts.out / "reproducibility.json"
    if opts.runs_from:
        report["runs"] = json.loads(opts.runs_from.read_text())["runs"]
    for run in range(0 if opts.runs_from else opts.repeats):
        report["runs"].append(_tune(opts, run))
        path.write_text(json.dumps(report, indent=1))
        print(
            f"run {run}: {report['runs'][-1].get('error') or 'ok'} in {report['runs'][-1]['wall_s']:.1f} s", flush=True
        )
    if not opts.oracle:
        try:
            import torch

            opts.oracle = "profiler" if torch.cuda.is_available() else "ab"
        except ImportError:
            opts.oracle = "ab"
    report["oracle_timer"] = opts.oracle
    done = [r for r in report["runs"] if "shapes" in r]
    if not done:
        print("no tune run finished: nothing to score", file=sys.stderr)
        return 1
    regrets, flips = [], 0
    for i, first in enumerate(done[0]["shapes"]):
        shape = first["shape"]
        candidates: list[dict[str, Any]] = []
        for r in done:
            s = r["shapes"][i]
            for config in [s["winner"], *s["finalists"]]:
                if config and config not in candidates:
                    candidates.append(config)
        oracle = {
            "shape": shape,
            **(_oracle_profiled if opts.oracle == "profiler" else _oracle)(opts, shape, candidates),
        }
        ratio = {json.dumps(c["config"], sort_keys=True): c.get("ratio") for c in oracle["candidates"]}
        scored = []
        for r in done:
            winner = r["shapes"][i]["winner"]
            mine = ratio.get(json.dumps(winner, sort_keys=True))
            regret = None if mine is None else mine / oracle["best_ratio"] - 1
            flip = regret is not None and winner != oracle["best"] and regret > (oracle["band"] or 0.0)
            flips += int(flip)
            if regret is not None:
                regrets.append(regret)
            scored.append({"run": r["run"], "winner": winner, "regret": regret, "flip": flip})
        oracle["runs"] = scored
        report["oracle"].append(oracle)
        path.write_text(json.dumps(report, indent=1))
        band = "one candidate, no A/B" if oracle["band"] is None else f"band ±{oracle['band']:.2%}"
        print(
            f"{_shape_arg(shape)}: {len(candidates)} distinct finalists ({band}); regrets "
            + " ".join("?" if s["regret"] is None else f"{s['regret']:+.2%}{'*' if s['flip'] else ''}" for s in scored),
            flush=True,
        )
    cells = len(done) * len(report["oracle"])
    report["summary"] = {
        "runs": len(done),
        "flips": flips,
        "cells": cells,
        "flip_rate": flips / cells,
        "median_regret": statistics.median(regrets) if regrets else None,
        "worst_regret": max(regrets) if regrets else None,
        "tune_wall_s": [round(r["wall_s"], 1) for r in report["runs"]],
    }
    path.write_text(json.dumps(report, indent=1))
    s = report["summary"]
    print(
        f"flip rate {flips}/{cells} (runs × shapes), median regret {s['median_regret']:.2%}, worst "
        f"{s['worst_regret']:.2%}; tune wall times {s['tune_wall_s']} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
