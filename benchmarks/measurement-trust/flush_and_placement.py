"""Whether the cache flush before each call, or how the operand sets are laid out, moves a winner/torch.matmul
ratio: the same two calls of `kernels/triton_gemm` timed by CUPTI kernel records (claims_check's protocol and
reading, 16 operand sets taken in turn) under each combination of
- the flush's size: kerntune's default (twice the L2 the device reports) or 256 MiB (the check's, do_bench's);
- the flush's byte value: 0 (kerntune's flush is ``zero_()``) or 1 (the check's ``fill_(1)``);
- the operand sets' layout: padded (each set behind a pad of a different size, as the check allocates them) or
  packed (copies allocated back to back, as kerntune's placements are);
each variant timed twice, the variants in one order and then the reverse, so drift does not pose as an effect.

Why: at 128×4096×4096 (a fused split-K winner) kerntune printed 1.1782, 1.1686 and 1.1740 where the independent
check read 1.1849, 1.1839 and 1.1934 (2026-12-03/04): always lower, 0.6–1.6%, and its absolute times lower too
(winner 18.05 against 18.4 µs, torch.matmul 15.36 against 15.5 µs in the last run). A bias of one sign is not
placement noise; a smaller flush that leaves part of the operands in L2 would make both sides faster.
Found on the H200 (2026-12-04, `benchmarks/data/measurement-trust/2026-12-04/h200-0442/`): it is neither — in
one process the eight combinations' means lie within 0.5% of each other (1.1730–1.1785), while fresh processes of
the check read the same config at 1.18–1.20: the ratio moves with the process (benchmarks/measurement-trust/history.md,
claims-check).

Usage: python benchmarks/measurement-trust/flush_and_placement.py OUT.json M,N,K=CONFIG [M,N,K=CONFIG ...] with CONFIG
NAME:VALUE,... (prints one line per variant and pass)
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claims_check import FLUSH_BYTES, _problem, matmul_calls, placed_operands, timed_blocks, warm_up

SETS, BLOCKS = 16, 100


def packed_operands(problem: Any, shape: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """``count`` copies of the spec's inputs allocated one after another, no pads (as kerntune places them)."""
    host = problem.make_inputs(shape, "bfloat16", 1)
    return [{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in host.items()} for _ in range(count)]


def main() -> int:
    out, specs = Path(sys.argv[1]), sys.argv[2:]
    problem = _problem()
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0))
    sizes = {"2xL2": max(2 * l2, 64 << 20), "256MiB": FLUSH_BYTES}
    flushes = {name: torch.empty(size, dtype=torch.uint8, device="cuda") for name, size in sizes.items()}
    rows: list[dict[str, Any]] = []
    for spec in specs:
        dims, _, cfg = spec.partition("=")
        m, n, k = (int(x) for x in dims.split(","))
        shape = {"M": m, "N": n, "K": k, "layout": "NN"}
        config = {a: int(b) for a, b in (kv.split(":") for kv in cfg.split(","))}
        pads: list[torch.Tensor] = []
        layouts = {
            "padded": placed_operands(problem, shape, SETS, pads),
            "packed": packed_operands(problem, shape, SETS),
        }
        placed = {name: [matmul_calls(problem, each, shape, config) for each in sets] for name, sets in layouts.items()}
        warm_up([c for calls in placed.values() for each in calls for c in each.values()])
        variants = list(itertools.product(sizes, (0, 1), layouts))
        for rnd, order in enumerate((variants, variants[::-1])):
            for size, value, layout in order:
                calls = placed[layout]
                found = timed_blocks(
                    [c["torch"] for c in calls], [c["winner"] for c in calls], flushes[size], BLOCKS, fill=value
                )
                row = {
                    "shape": shape,
                    "config": config,
                    "flush": size,
                    "flush_bytes": sizes[size],
                    "fill": value,
                    "layout": layout,
                    "pass": rnd,
                    **found,
                }
                rows.append(row)
                print(
                    f"{m}x{n}x{k} flush {size:>6} fill {value} {layout:>6} pass {rnd}: ratio {found['ratio']:.4f} "
                    f"({found['ci'][0]:.4f}-{found['ci'][1]:.4f}); torch {found['torch_us']:.2f} us, winner "
                    f"{found['winner_us']:.2f} us",
                    flush=True,
                )
        out.write_text(json.dumps({"l2_bytes": l2, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
