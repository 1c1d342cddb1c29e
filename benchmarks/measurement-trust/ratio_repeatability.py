"""Repeatability of a ratio, not of an absolute time: the tuned winner against torch.matmul at bf16 4096³,
measured ``--rounds`` times in one worker by ``kerntune ab --scheme in-process`` (A: torch.matmul, B: the
winner's config). Each round times the two interleaved launch by launch (A B B A ..., the L2 flushed before each)
and its ratio is the median of its pairs' log ratios, so the power cap's clock swings, which move the absolute
medians by several percent, land on both sides of each pair. Reports every round's ratio and absolute medians,
the ratios' spread (max − min) / median, and the ab verdict; writes JSON to --out.

    python benchmarks/measurement-trust/ratio_repeatability.py --winner BLOCK_M=128,...,num_stages=3 --rounds 20 --out
    r.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", default="kernels/triton_gemm")
    parser.add_argument("--shape", default="M=4096,N=4096,K=4096,layout=NN")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--winner", required=True, help="the tuned config, K=V,... over the spec's default")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--store", required=True)
    parser.add_argument("--out", required=True)
    opts = parser.parse_args()
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kerntune",
            "ab",
            "--spec",
            opts.spec,
            "--shape",
            opts.shape,
            "--dtype",
            opts.dtype,
            "@torch.matmul",
            f"@{opts.winner}",
            "--scheme",
            "in-process",
            "--processes",
            str(opts.rounds),
            "--store",
            opts.store,
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"kerntune ab failed ({proc.returncode}): {proc.stderr[-2000:]}")
    data = json.loads(proc.stdout)
    records = data["processes"]
    rounds = []
    for a, b in zip(records[::2], records[1::2], strict=True):
        if a["side"] != "A":
            a, b = b, a
        rounds.append(
            {"torch_ms": a["value"], "winner_ms": b["value"], "ratio": math.exp(b["info"]["paired_log_ratio"])}
        )
    ratios = [r["ratio"] for r in rounds]
    torch_ms = [r["torch_ms"] for r in rounds]
    result = {
        "spec": opts.spec,
        "shape": opts.shape,
        "dtype": opts.dtype,
        "winner": opts.winner,
        "rounds": rounds,
        "ratio_spread": (max(ratios) - min(ratios)) / statistics.median(ratios),
        "ratio_median": statistics.median(ratios),
        "torch_ms_spread": (max(torch_ms) - min(torch_ms)) / statistics.median(torch_ms),
        "verdict": data["verdict"],
        "ab_ratio": data["ratio"],
        "ci": [data["ci_low"], data["ci_high"]],
        "conditions": data.get("conditions"),
        "target": data.get("target"),
        "wall_s": time.perf_counter() - start,
    }
    Path(opts.out).write_text(json.dumps(result, indent=1))
    print("ratios", [round(r, 4) for r in ratios])
    print(
        f"ratio spread {result['ratio_spread']:.4f} (median {result['ratio_median']:.4f}); torch.matmul's "
        f"absolute medians spread {result['torch_ms_spread']:.4f}; verdict {data['verdict']} "
        f"{data['ratio']:.4f} ({data['ci_low']:.4f}-{data['ci_high']:.4f}); {result['wall_s']:.0f} s"
    )


if __name__ == "__main__":
    main()
