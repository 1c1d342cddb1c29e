"""Whether the independent check's own gate step moves the ratio it times next: one winner/torch.matmul pair of
`examples/triton_matmul` timed by claims_check's protocol and reading (16 operand sets in turn, 100 blocks of
torch W W torch, a 256 MiB fill before every call, CUPTI kernel records) in one process, before and after the
steps the check runs ahead of its timing — its gate (the output filled with NaN, each call once on the first
operand set) and its float64 reference — with ORDER ``gate-first`` (the check's order: the winner's first launch,
which allocates a split-K workspace, comes in the gate) or ``gate-later`` (the first launch in the warm-up, as
benchmarks/flush_and_placement.py had it).

Why: at 128×4096×4096 (a fused split-K winner) fresh processes of claims_check read 1.19–1.205 while kerntune
printed 1.17–1.18 and flush_and_placement's process, whose protocol is the check's but without the gate step,
read 1.169–1.182 (2026-12-04). Each call's raw time is kept, so another estimator (ratio of medians, of means)
can be set beside the check's median of block ratios.

Usage: python benchmarks/gate_step_state.py OUT.json ORDER M,N,K=CONFIG   (CONFIG NAME:VALUE,...; prints one line
per timing)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claims_check import (
    FLUSH_BYTES,
    PLACEMENTS,
    _problem,
    _relative_error,
    matmul_calls,
    placed_operands,
    timed_blocks,
    warm_up,
)

BLOCKS, REPEATS = 100, 3


def gate_step(problem: Any, args: dict[str, Any], shape: dict[str, Any], config: dict[str, Any]) -> dict[str, float]:
    """The check's gate, as claims_check.check_shape runs it: each call once into a NaN-filled output, against the
    float64 reference."""
    ref = problem.reference(args, shape)
    errors = {}
    for name, call in matmul_calls(problem, args, shape, config).items():
        args["c"].fill_(float("nan"))
        call()
        torch.cuda.synchronize()
        errors[name] = _relative_error(args["c"], ref)
    return errors


def main() -> int:
    out, order, spec = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    if order not in ("gate-first", "gate-later"):
        raise SystemExit(f"ORDER {order!r}: gate-first or gate-later")
    dims, _, cfg = spec.partition("=")
    m, n, k = (int(x) for x in dims.split(","))
    shape = {"M": m, "N": n, "K": k, "layout": "NN", "bias": 0}
    config = {a: int(b) for a, b in (kv.split(":") for kv in cfg.split(","))}
    problem = _problem()
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    pads: list[torch.Tensor] = []
    sets = placed_operands(problem, shape, PLACEMENTS, pads)
    rows: list[dict[str, Any]] = []
    phases = ("gate", "timed", "timed") if order == "gate-first" else ("timed", "gate", "timed")
    placed, gated = None, False
    for phase in phases:
        if phase == "gate":
            errors, gated = gate_step(problem, sets[0], shape, config), True
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
            print(f"{order} {'after' if found['after_gate'] else 'before'} the gate: median block ratio "
                  f"{found['ratio']:.4f} ({found['ci'][0]:.4f}-{found['ci'][1]:.4f}), ratio of medians "
                  f"{found['ratio_of_medians']:.4f}, of means {found['ratio_of_means']:.4f}; torch "
                  f"{found['torch_us']:.2f} us, winner {found['winner_us']:.2f} us", flush=True)
        out.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
