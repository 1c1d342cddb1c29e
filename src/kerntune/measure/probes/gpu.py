"""Calibration probes for CUDA and ROCm GPUs: copy, triad and read-only (sum) streams and an FMA-rate kernel
written in Triton, matrix rates per dtype through the vendor library (``torch.matmul`` → cuBLAS / hipBLASLt; fp8
through ``torch._scaled_mm`` where the device has it), and the host's submit-to-complete latency of an empty kernel.

All timed with kerntune's protocol in the warm regime: the streams' arrays are several times the L2, so every
pass reads memory anyway, and a matrix product of 8192³ is compute-bound. Each stream runs at the best of a few
block sizes and warp counts of its own (screened briefly, the best measured in full): a ceiling one untuned launch
sets would let a tuned kernel read as more than 100% of it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import torch
import triton
import triton.language as tl

from kerntune.backends.torch import TorchBackend
from kerntune.devices.telemetry import Telemetry
from kerntune.measure.probes import FULL_MS, fastest
from kerntune.measure.protocol import MeasureOptions, measure

STREAM_CONFIGS = ((1024, 4), (4096, 8), (8192, 16))
"""(BLOCK, num_warps) each stream is screened at."""
READ_ITEMS = (1, 8)
"""Blocks each program of the read stream sums (1: one program per block; 8: fewer, longer programs)."""
FMA_BLOCK = 1024
FMA_ITERS = 4096
FMA_PROGRAMS_PER_SM = 16
MATRIX_N = 8192


@triton.jit
def _copy(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(b_ptr + offs, tl.load(a_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _triad(a_ptr, b_ptr, c_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tl.store(a_ptr + offs, b + s * c, mask=mask)


@triton.jit
def _read(a_ptr, out_ptr, n, BLOCK: tl.constexpr, ITEMS: tl.constexpr):
    # A sum: every element read once, one float written per program (the writes are 1/(BLOCK*ITEMS) of the reads).
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ITEMS):
        offs = (tl.program_id(0) * ITEMS + i) * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(a_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0))


@triton.jit
def _fma_rate(out_ptr, iters, BLOCK: tl.constexpr):
    # Four independent chains per element: the multiply-adds of one chain wait on each other, the chains do
    # not, which covers the FMA pipe's latency. ``x * m + k`` is contracted to one FMA: fp fusion is asked for at
    # launch (Triton announces it off by default from 3.10; without it this would time a multiply and an add).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x0 = offs.to(tl.float32)
    x1 = x0 + 1.0
    x2 = x0 + 2.0
    x3 = x0 + 3.0
    for _ in range(iters):
        x0 = x0 * 0.999 + 0.001
        x1 = x1 * 0.999 + 0.001
        x2 = x2 * 0.999 + 0.001
        x3 = x3 * 0.999 + 0.001
    tl.store(out_ptr + offs, x0 + x1 + x2 + x3)


@triton.jit
def _empty(out_ptr):
    pass


def _median_ms(
    backend: TorchBackend,
    telemetry: Telemetry,
    launch: Callable[[], object],
    warmup_ms: float,
    budget_ms: float = FULL_MS,
) -> float:
    options = MeasureOptions(regime="warm", warmup_ms=warmup_ms, budget_ms=budget_ms)
    return measure(backend, [launch], options, telemetry).median_ms


def _best(
    backend: TorchBackend, telemetry: Telemetry, launches: dict[str, Callable[[], object]], warmup_ms: float
) -> tuple[float, str]:
    """The fastest of ``launches`` (configs of one stream), by ``probes.fastest``."""
    return fastest(
        {name: partial(_median_ms, backend, telemetry, launch, warmup_ms) for name, launch in launches.items()}
    )


def _product(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> Callable[[], object]:
    return lambda: torch.matmul(a, b, out=c)


def _matrix_rates(
    backend: TorchBackend, telemetry: Telemetry, warmup_ms: float, details: dict[str, Any]
) -> dict[str, float]:
    """FLOP/s of an 8192³ product per dtype through the vendor library; a dtype the device or library lacks is
    named in ``details['matrix_skipped']`` with the reason."""
    device, n = backend.device, MATRIX_N
    flops = 2.0 * n**3
    rates: dict[str, float] = {}
    skipped: dict[str, str] = {}
    nvidia = torch.version.hip is None
    plans: list[tuple[str, torch.dtype, bool | None]] = [
        ("bfloat16", torch.bfloat16, None),
        ("float16", torch.float16, None),
        ("float32", torch.float32, False),
    ]
    if nvidia and torch.cuda.get_device_capability(device) >= (8, 0):
        plans.append(("tf32", torch.float32, True))
    tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for name, dtype, allow_tf32 in plans:
            if allow_tf32 is not None:
                torch.backends.cuda.matmul.allow_tf32 = allow_tf32
            a = torch.randn(n, n, device=device).to(dtype)
            b = torch.randn(n, n, device=device).to(dtype)
            c = torch.empty(n, n, device=device, dtype=dtype)
            rates[name] = flops / (_median_ms(backend, telemetry, _product(a, b, c), warmup_ms) * 1e-3)
            del a, b, c
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    fp8 = getattr(torch, "float8_e4m3fn", None)
    scaled_mm = getattr(torch, "_scaled_mm", None)
    if fp8 is None or scaled_mm is None:
        skipped["float8_e4m3fn"] = "this torch has no float8 or _scaled_mm"
    else:
        try:
            a8 = torch.randn(n, n, device=device).to(fp8)
            b8 = torch.randn(n, n, device=device).to(fp8).t()  # column-major, as the fp8 GEMM requires
            one = torch.ones((), device=device)
            rates["float8_e4m3fn"] = flops / (
                _median_ms(backend, telemetry, lambda: scaled_mm(a8, b8, one, one, out_dtype=torch.bfloat16), warmup_ms)
                * 1e-3
            )
            del a8, b8
        except Exception as exc:  # a device or library without fp8 GEMMs (pre-Ada NVIDIA, older ROCm)
            skipped["float8_e4m3fn"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    if skipped:
        details["matrix_skipped"] = skipped
    details["matrix_n"] = n
    torch.cuda.empty_cache()
    return rates


def _streams(backend: TorchBackend, telemetry: Telemetry, n: int, warmup_ms: float) -> dict[str, tuple[float, str]]:
    """Median ms of the copy, the triad and the read stream over ``n`` fp32 elements per array, each at its best
    config (named beside it)."""
    a, b, c = (torch.ones(n, device=backend.device, dtype=torch.float32) for _ in range(3))
    sums = torch.empty(triton.cdiv(n, min(block for block, _ in STREAM_CONFIGS)), device=backend.device)

    def copy(block: int, warps: int) -> Callable[[], object]:
        return lambda: _copy[(triton.cdiv(n, block),)](a, b, n, BLOCK=block, num_warps=warps)

    def triad(block: int, warps: int) -> Callable[[], object]:
        return lambda: _triad[(triton.cdiv(n, block),)](a, b, c, 3.0, n, BLOCK=block, num_warps=warps)

    def read(block: int, warps: int, items: int) -> Callable[[], object]:
        return lambda: _read[(triton.cdiv(n, block * items),)](a, sums, n, BLOCK=block, ITEMS=items, num_warps=warps)

    return {
        "copy": _best(
            backend, telemetry, {f"BLOCK={b},num_warps={w}": copy(b, w) for b, w in STREAM_CONFIGS}, warmup_ms
        ),
        "triad": _best(
            backend, telemetry, {f"BLOCK={b},num_warps={w}": triad(b, w) for b, w in STREAM_CONFIGS}, warmup_ms
        ),
        "read": _best(
            backend,
            telemetry,
            {f"BLOCK={b},ITEMS={i},num_warps={w}": read(b, w, i) for b, w in STREAM_CONFIGS for i in READ_ITEMS},
            warmup_ms,
        ),
    }


def probe(backend: TorchBackend, telemetry: Telemetry, payload: Mapping[str, float]) -> dict[str, object]:
    """Copy, triad, FMA rate, matrix rates and launch latency of the backend's GPU."""
    device = backend.device
    warmup_ms = float(payload.get("warmup_ms", 100.0))
    n = max(1 << 20, int(payload["array_bytes"]) // 4)  # fp32 elements per array
    streams = _streams(backend, telemetry, n, warmup_ms)
    (copy_ms, copy_config), (triad_ms, triad_config), (read_ms, read_config) = (
        streams["copy"],
        streams["triad"],
        streams["read"],
    )
    programs = FMA_PROGRAMS_PER_SM * torch.cuda.get_device_properties(device).multi_processor_count
    out = torch.empty(programs * FMA_BLOCK, device=device, dtype=torch.float32)
    fma_ms = _median_ms(
        backend,
        telemetry,
        lambda: _fma_rate[(programs,)](out, FMA_ITERS, BLOCK=FMA_BLOCK, num_warps=4, enable_fp_fusion=True),
        warmup_ms,
    )
    details: dict[str, Any] = {
        "array_bytes": 4 * n,
        "copy_ms": copy_ms,
        "triad_ms": triad_ms,
        "read_ms": read_ms,
        "stream_configs": {"copy": copy_config, "triad": triad_config, "read": read_config},
        "fma_ms": fma_ms,
        "fma_programs": programs,
        "fma_iters": FMA_ITERS,
        "regime": "warm",
        "copy_kernel": "Triton",
        "matrix_library": "torch.matmul",
    }
    matrix = _matrix_rates(backend, telemetry, warmup_ms, details)
    _empty[(1,)](out)  # compiled before the latency is taken
    torch.cuda.synchronize(device)
    walls = []
    for _ in range(200):  # host-side: submit an empty kernel and wait for it, as a program does per launch
        start = time.perf_counter()
        _empty[(1,)](out)
        torch.cuda.synchronize(device)
        walls.append((time.perf_counter() - start) * 1e3)
    flops = 2.0 * 4 * FMA_BLOCK * FMA_ITERS * programs  # four chains, a multiply-add is 2 flops
    return {
        "copy_bytes_per_s": 2 * 4 * n / (copy_ms * 1e-3),
        "triad_bytes_per_s": 3 * 4 * n / (triad_ms * 1e-3),
        "read_bytes_per_s": 4 * n / (read_ms * 1e-3),
        "fma_flops_per_s": flops / (fma_ms * 1e-3),
        "launch_latency_ms": statistics.median(walls),
        "matrix_flops_per_s": matrix,
        "details": details,
    }
