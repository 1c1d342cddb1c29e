"""Whether where the operands lie in device memory moves the winner/torch.matmul ratio of `kernels/triton_gemm`
at a config: the same two calls timed by CUPTI kernel records (claims_check's protocol and reading) on PLACEMENTS
fresh sets of operands in one process, each set allocated behind a pad of a different size and all kept alive, so
no two sets share addresses.

Why: the independent check of 2026-12-03 read the same fused split-K winner at 128×4096×4096 as 1.157, 1.178 and
1.195 in three processes, and kerntune's confirmation (rounds in fresh processes) 1.163–1.185, where one process's
blocks agree to ±0.3%. A ratio that moves with the operands' physical placement (L2 partition, memory channel)
cannot be pinned by one process; this separates placement from everything else a process differs in.

Usage: python benchmarks/measurement-trust/placement_spread.py OUT.json M,N,K=CONFIG [M,N,K=CONFIG ...] where CONFIG is
NAME:VALUE,... (prints one line per placement and pass and a spread line per shape: the spread of the first
pass's placement ratios against their own intervals' mean half-width, and how the two passes' ratios correlate)
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claims_check import FLUSH_BYTES, _problem, matmul_calls, timed_blocks, warm_up

PLACEMENTS, BLOCKS, PASSES = 8, 40, 2


def placements(
    problem: Any, shape: dict[str, Any], config: dict[str, int], flush: torch.Tensor, keep: list[Any]
) -> list[dict[str, Any]]:
    """PLACEMENTS fresh operand sets, each behind a pad of 1–255 MiB (kept in ``keep`` with the operands, so the
    caching allocator hands out new memory every time), each timed for BLOCKS blocks of torch W W torch, then all
    timed again in the same order (PASSES passes): a ratio that follows the placement repeats in the second pass;
    one that drifts with time does not."""
    rng, sets = random.Random(0), []
    for _ in range(PLACEMENTS):
        keep.append(torch.empty(rng.randrange(1, 256) << 20, dtype=torch.uint8, device="cuda"))
        args = problem.make_inputs(shape, "bfloat16", 1)
        keep.append(args)
        calls = matmul_calls(problem, args, shape, config)
        warm_up(calls.values())
        sets.append((args, calls))
    found = []
    for run in range(PASSES):
        for p, (args, calls) in enumerate(sets):
            timed = timed_blocks(calls["torch"], calls["winner"], flush, BLOCKS)
            addresses = {k: hex(v.data_ptr()) for k, v in args.items() if isinstance(v, torch.Tensor)}
            found.append({"placement": p, "pass": run, "addresses": addresses, **timed})
    return found


def main() -> int:
    out, problem = Path(sys.argv[1]), _problem()
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    rows: list[dict[str, Any]] = []
    for arg in sys.argv[2:]:
        dims, _, text = arg.partition("=")
        shape = dict(zip("MNK", (int(x) for x in dims.split(",")), strict=True)) | {"layout": "NN", "bias": 0}
        config = {k: int(v) for k, v in (kv.split(":") for kv in text.split(","))}
        keep: list[Any] = []
        found = placements(problem, shape, config, flush, keep)
        ratios = [f["ratio"] for f in found if f["pass"] == 0]
        again = [f["ratio"] for f in found if f["pass"] == 1]
        half = statistics.mean((f["ci"][1] - f["ci"][0]) / 2 / f["ratio"] for f in found)
        spread = (max(ratios) - min(ratios)) / statistics.median(ratios)
        repeat = float(np.corrcoef(ratios, again)[0, 1]) if len(again) == len(ratios) > 2 else None
        rows.append(
            {
                "shape": shape,
                "config": config,
                "placements": found,
                "spread": spread,
                "mean_half_width": half,
                "pass_correlation": repeat,
            }
        )
        out.write_text(json.dumps(rows, indent=1))
        for f in found:
            print(
                f"{dims} placement {f['placement']} pass {f['pass']}: ratio {f['ratio']:.4f} "
                f"({f['ci'][0]:.4f}-{f['ci'][1]:.4f}); "
                f"torch {f['torch_us']:.2f} us, winner {f['winner_us']:.2f} us; c at {f['addresses'].get('c')}",
                flush=True,
            )
        print(
            f"{dims}: placements' ratios {min(ratios):.4f}-{max(ratios):.4f}, spread {100 * spread:.2f}% against "
            f"a mean interval half-width of {100 * half:.2f}%; the two passes' per-placement ratios correlate "
            f"{'n/a' if repeat is None else f'{repeat:.2f}'}",
            flush=True,
        )
        del keep
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
