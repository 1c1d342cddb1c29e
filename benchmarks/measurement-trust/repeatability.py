"""Repeatability in one process: 20 kerntune measurements of one bf16 4096³ matmul (torch.matmul) at default
settings, with triton.testing.do_bench timing the same launch beside each (interleaved, same process), and
spread = (max − min) / median of each series. Also a graph-mode measurement of a short kernel, showing
launch overhead reported apart, and the telemetry kerntune records. Writes JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import triton

from kerntune.backends.torch import TorchBackend
from kerntune.measure.protocol import MeasureOptions, measure


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--variants",
        default="100:0:200",
        help="warmup_ms:min_window_ms:max_samples,... (the first is what the default settings do)",
    )
    opts = parser.parse_args()
    backend = TorchBackend("cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.empty(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def launch() -> None:
        torch.matmul(a, b, out=c)

    telemetry = backend.telemetry()
    variants = {}
    for text in opts.variants.split(","):
        warmup, window, most = (float(x) for x in text.split(":"))
        options = MeasureOptions(warmup_ms=warmup, min_window_ms=window, max_samples=int(most))
        ours, theirs, details = [], [], []
        start = time.perf_counter()
        for _ in range(opts.repeats):
            m = measure(backend, [launch], options, telemetry)
            ours.append(m.median_ms)
            details.append(
                {"median_ms": m.median_ms, "n": m.n, "ci_ms": m.ci_ms, "telemetry": dict(m.conditions.telemetry or {})}
            )
            theirs.append(float(triton.testing.do_bench(launch)))
        variants[text] = {
            "kerntune_medians_ms": ours,
            "kerntune_spread": spread(ours),
            "do_bench_ms": theirs,
            "do_bench_spread": spread(theirs),
            "wall_s": time.perf_counter() - start,
            "details": details,
        }
        print(
            text,
            "kerntune spread",
            round(spread(ours), 4),
            "do_bench spread",
            round(spread(theirs), 4),
            "wall",
            round(time.perf_counter() - start, 1),
            flush=True,
        )
    small_a = torch.randn(1 << 14, device="cuda")
    small_c = torch.empty_like(small_a)

    def tiny() -> None:
        torch.mul(small_a, 2.0, out=small_c)

    eager = measure(backend, [tiny], MeasureOptions(regime="warm"), telemetry)
    graph = measure(backend, [tiny], MeasureOptions(regime="warm", mode="graph"), telemetry)
    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "variants": variants,
        "tiny_kernel": {
            "eager_warm_median_ms": eager.median_ms,
            "graph_median_ms": graph.median_ms,
            "graph_launch_overhead_ms": graph.conditions.launch_overhead_ms,
            "graph_conditions": graph.conditions.as_dict(),
        },
    }
    with open(opts.out, "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result["tiny_kernel"], indent=2))


if __name__ == "__main__":
    main()
