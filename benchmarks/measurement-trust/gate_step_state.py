"""Whether the independent check's own gate step moves the ratio it times next: one winner/torch.matmul pair of
`kernels/triton_gemm` timed by claims_check's protocol and reading (16 operand sets in turn, 100 blocks of
torch W W torch, a 256 MiB fill before every call, CUPTI kernel records) in one process, before and after the
steps the check runs ahead of its timing — its gate (the output filled with NaN, each call once on the first
operand set) and its float64 reference — with ORDER ``gate-first`` (the check's order: the winner's first launch,
which allocates a split-K workspace, comes in the gate) or ``gate-later`` (the first launch in the warm-up, as
benchmarks/measurement-trust/flush_and_placement.py had it).

Why: at 128×4096×4096 (a fused split-K winner) fresh processes of claims_check read 1.19–1.205 while kerntune
printed 1.17–1.18 and flush_and_placement's process, whose protocol is the check's but without the gate step,
read 1.169–1.182 (2026-12-04). Each call's raw time is kept, so another estimator (ratio of medians, of means)
can be set beside the check's median of block ratios.

Usage: python benchmarks/measurement-trust/gate_step_state.py OUT.json ORDER M,N,K=CONFIG   (CONFIG NAME:VALUE,...;
prints one line per timing)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, NoReturn

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claims_check import (
    FLUSH_BYTES,
    PLACEMENTS,
    _problem,
    gate_errors,
    matmul_calls,
    placed_operands,
    refused,
    timed_blocks,
    warm_up,
)

BLOCKS, REPEATS = 100, 3


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.exit(refused("gate_step_state", message))


def main() -> int:
    parser = _OneLineParser(description="The check's ratio before and after its own gate step.")
    parser.add_argument("out", type=Path)
    parser.add_argument("order", choices=("gate-first", "gate-later"))
    parser.add_argument("spec", help="M,N,K=NAME:VALUE,... (the config)")
    opts = parser.parse_args()
    out, order = opts.out, opts.order
    try:
        dims, _, cfg = opts.spec.partition("=")
        m, n, k = (int(x) for x in dims.split(","))
        config = {a: int(b) for a, b in (kv.split(":") for kv in cfg.split(","))}
    except ValueError:
        parser.error(f"{opts.spec!r}: give M,N,K=NAME:VALUE,... with whole numbers, e.g. 128,4096,4096=BLOCK_M:64")
    shape = {"M": m, "N": n, "K": k, "layout": "NN", "bias": 0}
    if not torch.cuda.is_available():
        return refused("gate_step_state", "no CUDA device: it times kernels on a GPU")
    problem = _problem()
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    pads: list[torch.Tensor] = []
    sets = placed_operands(problem, shape, PLACEMENTS, pads)
    rows: list[dict[str, Any]] = []
    phases = ("gate", "timed", "timed") if order == "gate-first" else ("timed", "gate", "timed")
    placed, gated = None, False
    for phase in phases:
        if phase == "gate":
            errors = gate_errors(problem, sets[0], shape, matmul_calls(problem, sets[0], shape, config))
            gated = True
            print(f"gate: relative errors {errors}", flush=True)
            continue
        if placed is None:
            placed = [matmul_calls(problem, each, shape, config) for each in sets]
            warm_up([c for each in placed for c in each.values()])
        for _ in range(REPEATS):
            found = timed_blocks([c["torch"] for c in placed], [c["winner"] for c in placed], flush, BLOCKS)
            calls = found["call_us"]
            torch_us = [t for i, t in enumerate(calls) if i % 4 in (0, 3)]
            winner_us = [t for i, t in enumerate(calls) if i % 4 in (1, 2)]
            found["ratio_of_medians"] = statistics.median(winner_us) / statistics.median(torch_us)
            found["ratio_of_means"] = statistics.fmean(winner_us) / statistics.fmean(torch_us)
            found["after_gate"] = gated
            rows.append({"order": order, "shape": shape, "config": config, **found})
            print(
                f"{order} {'after' if found['after_gate'] else 'before'} the gate: median block ratio "
                f"{found['ratio']:.4f} ({found['ci'][0]:.4f}-{found['ci'][1]:.4f}), ratio of medians "
                f"{found['ratio_of_medians']:.4f}, of means {found['ratio_of_means']:.4f}; torch "
                f"{found['torch_us']:.2f} us, winner {found['winner_us']:.2f} us",
                flush=True,
            )
        out.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
