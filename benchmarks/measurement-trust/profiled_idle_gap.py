"""Whether an idle device before each launch moves the profiler's kernel durations: the winner/torch.matmul ratio
of `kernels/triton_gemm` at a config, timed by CUPTI kernel records in three protocols alternated block by block
(the run of 2026-12-03 13:51 UTC had the first two, the run of 16:23 UTC all three).

- ``drained``: the host waits for the device after the flush and after the launch (the device idles between the
  flush's end and the kernel's start, and between calls), as kerntune's second timer did up to 2026-12-03;
- ``back-to-back``: flush and launch enqueued one after the other, the host never waiting inside the block (the
  device goes from the flush straight into the kernel), as a program and `benchmarks/measurement-trust/claims_check.py`
  run them;
- ``2xL2 flush``: back to back, the fill cut to twice the L2 (kerntune's flush size until 2026-12-03).

Each block: BLOCKS groups of torch, winner, winner, torch, a 256 MiB one-byte fill before every call, one profiler
session, split at the fills (claims_check's own reading). Usage: python
benchmarks/measurement-trust/profiled_idle_gap.py OUT.json M,N,K=CONFIG [M,N,K=CONFIG ...] where CONFIG is
NAME:VALUE,...  (prints one line per shape and protocol)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claims_check import FLUSH_BYTES, _problem, matmul_calls, timed_blocks, warm_up

BLOCKS, REPEATS = 40, 6


def both_protocols(
    problem: Any, shape: dict[str, Any], config: dict[str, int], flush: torch.Tensor
) -> dict[str, list[dict[str, Any]]]:
    """REPEATS blocks of each protocol, rotating which goes first."""
    calls = matmul_calls(problem, problem.make_inputs(shape, "bfloat16", 1), shape, config)
    warm_up(calls.values())
    l2 = int(torch.cuda.get_device_properties(0).L2_cache_size)
    small = flush[: max(2 * l2, 64 << 20)]  # kerntune's flush: twice the L2
    found: dict[str, list[dict[str, Any]]] = {"drained": [], "back-to-back": [], "2xL2 flush": []}
    modes = list(found)
    for r in range(REPEATS):
        for mode in modes[r % 3 :] + modes[: r % 3]:
            found[mode].append(
                timed_blocks(
                    calls["torch"], calls["winner"], small if mode == "2xL2 flush" else flush, BLOCKS, mode == "drained"
                )
            )
    return found


def main() -> int:
    out, problem = Path(sys.argv[1]), _problem()
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    rows = []
    for arg in sys.argv[2:]:
        dims, _, text = arg.partition("=")
        shape = dict(zip("MNK", (int(x) for x in dims.split(",")), strict=True)) | {"layout": "NN", "bias": 0}
        config = {k: int(v) for k, v in (kv.split(":") for kv in text.split(","))}
        found = both_protocols(problem, shape, config, flush)
        row = {"shape": shape, "config": config, **found}
        rows.append(row)
        out.write_text(json.dumps(rows, indent=1))
        for mode, blocks in found.items():
            ratios = [b["ratio"] for b in blocks]
            print(
                f"{dims} {mode}: ratio median {statistics.median(ratios):.4f} (blocks {min(ratios):.4f}-"
                f"{max(ratios):.4f}); torch {statistics.median(b['torch_us'] for b in blocks):.2f} us, winner "
                f"{statistics.median(b['winner_us'] for b in blocks):.2f} us",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
