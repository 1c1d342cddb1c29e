"""Decode GEMMs (M ≤ 32, B an nn.Linear weight) against the read ceiling: where do the weights' bytes go?

    python benchmarks/gemm/decode_gemm.py --out DIR [--shapes "16,14336,4096;..."] [--rounds 15] [--top 3]

At decode a GEMM streams its weight once: its time is bytes over bandwidth, and the ceiling is what a pure read of
the same bytes reaches. Per shape, in one process, bf16, layout NT (``x @ W.t()``, W row-major N×K):
1. ``read``: a Triton kernel that only reads W (and writes one float per program), at a few block sizes — the
   ceiling a GEMM of this shape could reach;
2. ``cublas``: ``torch.mm`` at the same layout;
3. a sweep of kernels/triton_gemm's own kernel over the decode part of its space (BLOCK_N, BLOCK_K, SPLIT_K
   fused, warps, stages; BLOCK_M 16) — every config gated against cuBLAS's output before it is timed.
Timing: every side once per round in rotating order, a 256 MB L2 flush before each launch (the weights are read
from HBM as in a decode step, whose other weights have evicted them), CUDA events around the launch; a side's
figure is its median over rounds. The independent check: the best configs of each shape and cuBLAS timed again
under torch.profiler, interleaved launch by launch, by CUPTI kernel durations (every kernel between two flushes
summed, so a split reduction counts). Writes DIR/decode_gemm.json and prints a table.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ((16, 14336, 4096), (16, 4096, 14336), (16, 4096, 4096), (16, 1024, 4096), (16, 32000, 4096))


def _spec() -> Any:
    loader = importlib.util.spec_from_file_location("triton_matmul_spec", ROOT / "kernels/triton_gemm/spec.py")
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


@triton.jit
def read_kernel(w_ptr, out_ptr, numel, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    # Each program reads ITERS contiguous blocks and writes their sum: a read of every byte, nothing else.
    base = tl.program_id(0).to(tl.int64) * BLOCK * ITERS
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ITERS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(w_ptr + offs, mask=offs < numel, other=0.0).to(tl.float32)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc))


def decode_configs() -> list[dict[str, int]]:
    configs = []
    for bn, bk, split, warps, stages in itertools.product(
        (32, 64, 128), (64, 128, 256, 512), (1, 2, 4, 8), (2, 4), (3, 5)
    ):
        smem = (16 * bk + bk * bn) * 2 * stages
        if bn * bk > 128 * 256 or (warps == 2 and bn > 32) or smem > 232448:
            continue
        configs.append(
            {
                "BLOCK_M": 16,
                "BLOCK_N": bn,
                "BLOCK_K": bk,
                "GROUP_M": 8,
                "SPLIT_K": split,
                "FUSED": int(split > 1),
                "TMA": 0,
                "PERSISTENT": 0,
                "num_warps": warps,
                "num_stages": stages,
            }
        )
    return configs


def label(c: dict[str, int]) -> str:
    return f"N{c['BLOCK_N']}K{c['BLOCK_K']}s{c['SPLIT_K']}w{c['num_warps']}p{c['num_stages']}"


def _launch(
    spec: Any,
    x: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    ws: torch.Tensor,
    locks: torch.Tensor,
    config: dict[str, int],
) -> Any:
    """kernels/triton_gemm's kernel at ``config`` on x @ b into c (BLOCK_M 16, no bias, one product)."""
    (m, k), n = x.shape, b.shape[1]
    return spec.matmul_kernel[(triton.cdiv(m, 16) * triton.cdiv(n, config["BLOCK_N"]), config["SPLIT_K"], 1)](
        x,
        b,
        c,
        c,
        ws,
        locks,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        0,
        0,
        0,
        BLOCK_M=16,
        BLOCK_N=config["BLOCK_N"],
        BLOCK_K=config["BLOCK_K"],
        GROUP_M=8,
        SPLIT_K=config["SPLIT_K"],
        FUSED=config["FUSED"],
        HAS_BIAS=False,
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )


def _compile(configs: list[dict[str, int]]) -> int:
    """A compile worker: launches each config once at a small shape of the same specialization (every int a
    multiple of 16, unit inner strides), so the parent finds the binaries in Triton's cache."""
    spec, dev = _spec(), torch.device("cuda")
    m, n, k = 16, 1024, 4096
    x = torch.zeros((m, k), dtype=torch.bfloat16, device=dev)
    b = torch.zeros((n, k), dtype=torch.bfloat16, device=dev).t()
    c = torch.empty((m, n), dtype=torch.bfloat16, device=dev)
    done = 0
    for config in configs:
        ws = torch.empty((config["SPLIT_K"], m, n), dtype=torch.float32, device=dev)
        locks = torch.zeros(n // config["BLOCK_N"], dtype=torch.int32, device=dev)
        try:
            _launch(spec, x, b, c, ws, locks, config)
            done += 1
        except Exception:  # the parent reports it
            pass
    torch.cuda.synchronize()
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shapes", default="")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--configs", type=int, default=0, help="at most this many sweep configs (0: all)")
    parser.add_argument("--compile-workers", type=int, default=8)
    args = parser.parse_args()
    spec = _spec()
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shapes.split(";") if s] or list(SHAPES)
    configs = decode_configs()[: args.configs or None]
    if args.compile_workers > 1:
        import concurrent.futures
        import multiprocessing
        import time

        began = time.perf_counter()
        slices = [configs[i :: args.compile_workers] for i in range(args.compile_workers)]
        with concurrent.futures.ProcessPoolExecutor(
            args.compile_workers, mp_context=multiprocessing.get_context("spawn")
        ) as pool:
            compiled = sum(pool.map(_compile, slices))
        print(
            f"compiled {compiled} of {len(configs)} configs in {time.perf_counter() - began:.0f} s "
            f"({args.compile_workers} processes)",
            flush=True,
        )
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "rounds": args.rounds,
        "shapes": [],
    }
    for m, n, k in shapes:
        report["shapes"].append(_shape(spec, m, n, k, configs, flush, args.rounds, args.top))
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "decode_gemm.json").write_text(json.dumps(report, indent=1))
    return 0


def _sides(spec: Any, m: int, n: int, k: int, configs: list[dict[str, int]]) -> tuple[dict[str, Any], int, int]:
    """Every side of one shape as a launch closure (sweep configs gated against cuBLAS), the configs rejected,
    and the weight's bytes."""
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn((m, k), generator=gen, device=dev).to(torch.bfloat16)
    w = torch.randn((n, k), generator=gen, device=dev).to(torch.bfloat16)
    b = w.t()
    expect = torch.mm(x, b)
    out = torch.empty_like(expect)
    sides: dict[str, Any] = {"cublas": lambda: torch.mm(x, b, out=out)}
    partial = torch.empty(1 << 20, dtype=torch.float32, device=dev)
    for block, iters in ((2048, 8), (4096, 8), (8192, 4)):
        grid = (triton.cdiv(w.numel(), block * iters),)
        sides[f"read{block}x{iters}"] = lambda g=grid, bl=block, it=iters: read_kernel[g](
            w, partial, w.numel(), BLOCK=bl, ITERS=it, num_warps=8
        )
    rejected = 0
    for config in configs:
        if k % (config["SPLIT_K"] * config["BLOCK_K"]):
            continue
        c = torch.empty_like(expect)
        tiles = triton.cdiv(m, 16) * triton.cdiv(n, config["BLOCK_N"])
        ws = torch.empty((config["SPLIT_K"], m, n), dtype=torch.float32, device=dev)
        locks = torch.zeros(tiles, dtype=torch.int32, device=dev)

        def run(
            config: dict[str, int] = config, c: torch.Tensor = c, ws: torch.Tensor = ws, locks: torch.Tensor = locks
        ) -> Any:
            return _launch(spec, x, b, c, ws, locks, config)

        try:
            run()
            torch.cuda.synchronize()
        except Exception as exc:  # out of resources and the like: the config is not a side
            print(f"  {label(config)}: {type(exc).__name__}: {str(exc)[:80]}", flush=True)
            rejected += 1
            continue
        if not torch.allclose(c.float(), expect.float(), rtol=2e-2, atol=2e-1):
            rejected += 1
            continue
        sides[label(config)] = run
    return sides, rejected, w.numel() * 2


def _shape(
    spec: Any, m: int, n: int, k: int, configs: list[dict[str, int]], flush: torch.Tensor, rounds: int, top: int
) -> dict[str, Any]:
    sides, rejected, weight_bytes = _sides(spec, m, n, k, configs)
    names = list(sides)
    times: dict[str, list[float]] = {name: [] for name in names}
    start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:  # rotating order
            flush.fill_(r)  # L2 cold: the weight comes from HBM, as in a decode step
            start.record()
            sides[name]()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) * 1000.0)
    median = {name: statistics.median(v) for name, v in times.items()}
    sweep = sorted((nm for nm in names if nm != "cublas" and not nm.startswith("read")), key=median.__getitem__)
    best_read = min((nm for nm in names if nm.startswith("read")), key=median.__getitem__)
    check = ["cublas", *sweep[:top], best_read]
    cupti = _profile(check, sides, flush, rounds)
    gbs = {nm: weight_bytes / median[nm] / 1e3 for nm in check}
    print(
        f"{m}x{n}x{k} ({weight_bytes / 1e6:.0f} MB): "
        + ", ".join(
            f"{nm} {median[nm]:.1f} us ({gbs[nm]:.0f} GB/s; cupti {cupti.get(nm, float('nan')):.1f})" for nm in check
        ),
        flush=True,
    )
    return {
        "M": m,
        "N": n,
        "K": k,
        "weight_MB": weight_bytes / 1e6,
        "configs_timed": len(sweep),
        "configs_rejected": rejected,
        "events_us": median,
        "cupti_us": cupti,
        "best": sweep[0] if sweep else None,
    }


def _profile(names: list[str], sides: dict[str, Any], flush: torch.Tensor, rounds: int) -> dict[str, float]:
    """CUPTI kernel time per side: each launch follows a flush, so the kernels between two flushes are its."""
    from torch.profiler import ProfilerActivity, profile

    order: list[str] = []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                flush.fill_(r)
                sides[name]()
                order.append(name)
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA  # type: ignore[attr-defined]
    kernels = sorted((e for e in prof.events() if e.device_type == cuda), key=lambda e: e.time_range.start)
    per_launch: list[float] = []
    for event in kernels:
        if "fill" in event.name or "FillFunctor" in event.name:
            per_launch.append(0.0)
        elif per_launch:
            per_launch[-1] += event.time_range.elapsed_us()
    if len(per_launch) != len(order):
        return {"error": float(len(per_launch))}
    out: dict[str, list[float]] = {}
    for name, us in zip(order, per_launch, strict=True):
        out.setdefault(name, []).append(us)
    return {name: statistics.median(v) for name, v in out.items()}


if __name__ == "__main__":
    raise SystemExit(main())
