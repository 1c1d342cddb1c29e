"""Why did one config time at 0.018 ms in one run and 0.034 ms in another under the same protocol? Measure a
few triton_matmul configs at M=16, N=K=4096 (bf16) several times in this process — interleaved with other
configs, as a search does — under the default protocol and the shortened one of the efficiency runs, printing
each measurement's median, sample count, 10th/90th percentiles and the telemetry the protocol recorded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = [
    "BLOCK_M=16,BLOCK_N=64,BLOCK_K=128,GROUP_M=8,SPLIT_K=4,FUSED=1,TMA=0,PERSISTENT=0,num_warps=4,num_stages=3",
    "BLOCK_M=16,BLOCK_N=64,BLOCK_K=128,GROUP_M=8,SPLIT_K=1,FUSED=0,TMA=0,PERSISTENT=0,num_warps=4,num_stages=3",
    "BLOCK_M=16,BLOCK_N=64,BLOCK_K=256,GROUP_M=8,SPLIT_K=1,FUSED=0,TMA=0,PERSISTENT=0,num_warps=2,num_stages=5",
    "BLOCK_M=16,BLOCK_N=32,BLOCK_K=32,GROUP_M=8,SPLIT_K=1,FUSED=0,TMA=1,PERSISTENT=0,num_warps=2,num_stages=2",
]


def parse(key: str) -> dict[str, int]:
    return {k: int(v) for k, v in (item.split("=") for item in key.split(","))}


def main(rounds: int) -> None:
    import torch

    from kerntune.backends.torch import TorchBackend
    from kerntune.pipeline.measure import MeasureOptions, measure
    from kerntune.pipeline.spec import load_spec

    backend = TorchBackend("cuda")
    telemetry = backend.telemetry()
    spec = sys.modules[load_spec(str(ROOT / "examples" / "triton_matmul")).problem.make_inputs.__module__]
    m, n, k = 16, 4096, 4096
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    args = {"a": a, "b": b, "c": c, "M": m, "N": n, "K": k}
    launches: dict[str, Any] = {"torch.matmul": lambda: torch.matmul(a, b, out=c)}
    for key in CONFIGS:
        meta = {**parse(key), "M": m, "N": n, "K": k}
        launches[key] = lambda meta=meta: spec.launch(spec.matmul_kernel, args, meta)
        launches[key]()
    torch.cuda.synchronize()
    protocols = {"default": MeasureOptions(), "short": MeasureOptions(warmup_ms=100, budget_ms=500)}
    for r in range(rounds):
        for name, options in protocols.items():
            for key, launch in launches.items():
                got = measure(backend, [launch], options, telemetry)
                tele = got.conditions.telemetry or {}
                row = {"round": r, "protocol": name, "config": key[:90], "median_ms": round(got.median_ms, 5),
                       "n": got.n, "q10": round(got.quantile(0.1), 5), "q90": round(got.quantile(0.9), 5),
                       "telemetry": tele}
                print(json.dumps(row, default=str), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
