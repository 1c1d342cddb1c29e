"""The end-to-end demo: a transformer MLP block (RMSNorm, gate and up projections, SiLU, down projection, residual)
whose matmuls and RMSNorm run as Triton kernels with configs chosen per call from a deployed kerntune table.

    python examples/transformer_mlp/run.py --table TABLE.json [--tokens 16] [--dim 4096] [--hidden 14336]

The kernels are the ones of kernels/triton_gemm and kernels/triton_rmsnorm, so the table comes from tuning
those specs at this block's shapes (M = tokens; N, K from dim and hidden) and ``kerntune deploy``; each call's key
is built as deploy writes it (op, kernel source hash, dtype, shape with its layout and bias, device). Without a
table, or under ``KERNTUNE_DISPATCH=off``, every kernel runs its spec's default config. The output is checked
against a torch float32 reference (exit 1 if it differs); the last line printed is the milliseconds per forward
pass, which ``kerntune verify`` and ``kerntune ab`` read. ``TRITON_INTERPRET=1 ... --device cpu --dtype float16``
runs it on a CPU (the interpreter has no bfloat16 dot).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import triton

from kerntune.runtime import Dispatcher, kernel_hash, torch_device_fields

ROOT = Path(__file__).resolve().parents[2]


def _spec(folder: str) -> ModuleType:
    name = folder.replace("/", "_")
    loaded = importlib.util.spec_from_file_location(f"kerntune_demo_{name}", ROOT / folder / "spec.py")
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


MM, RMS = _spec("kernels/triton_gemm"), _spec("kernels/triton_rmsnorm")


class TunedOps:
    """The block's two kernels, each behind a Dispatcher reading the same table."""

    def __init__(self, table: str, dtype: str, device: dict[str, Any]) -> None:
        self.mm = Dispatcher(
            table,
            key=lambda m, n, k: (m, n, k),
            key_fields=("M", "N", "K"),
            default=MM.problem.space.default,
            name="matmul",
            device={
                **device,
                "op": MM.problem.name,
                "dtype": dtype,
                "layout": "NN",
                "bias": 0,
                "source": kernel_hash(MM.matmul_kernel),
            },
        )
        self.rms = Dispatcher(
            table,
            key=lambda m, n: (m, n),
            key_fields=("M", "N"),
            default=RMS.problem.space.default,
            name="rmsnorm",
            device={**device, "op": RMS.problem.name, "dtype": dtype, "source": kernel_hash(RMS.rmsnorm_kernel)},
        )

    def matmul(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        (m, k), n = a.shape, b.shape[1]
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
        MM.launch(MM.matmul_kernel, {"a": a, "b": b, "c": c, "M": m, "N": n, "K": k}, self.mm.select(m, n, k))
        return c

    def rmsnorm(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        m, n = x.shape
        y = torch.empty_like(x)
        config = self.rms.select(m, n)
        RMS.rmsnorm_kernel[(triton.cdiv(m, config["ROWS"]),)](
            x, w, y, m, n, RMS.EPS, BLOCK_N=triton.next_power_of_2(n), **config
        )
        return y


def mlp(ops: TunedOps, x: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
    h = ops.rmsnorm(x, p["norm"])
    gated = torch.nn.functional.silu(ops.matmul(h, p["gate"])) * ops.matmul(h, p["up"])
    return x + ops.matmul(gated, p["down"])


def reference(x: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
    f = {k: v.float() for k, v in p.items()}
    h = torch.nn.functional.rms_norm(x.float(), (x.shape[1],), f["norm"], RMS.EPS)
    return x.float() + (torch.nn.functional.silu(h @ f["gate"]) * (h @ f["up"])) @ f["down"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", default="")
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--dim", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=14336)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator().manual_seed(0)

    def weight(*shape: int, scale: float) -> torch.Tensor:
        return (scale * torch.randn(shape, generator=gen)).to(dtype).to(args.device)

    p = {
        "norm": (1 + weight(args.dim, scale=0.1)),
        "gate": weight(args.dim, args.hidden, scale=args.dim**-0.5),
        "up": weight(args.dim, args.hidden, scale=args.dim**-0.5),
        "down": weight(args.hidden, args.dim, scale=args.hidden**-0.5),
    }
    x = weight(args.tokens, args.dim, scale=1.0)
    on_gpu = args.device.startswith("cuda")
    device = torch_device_fields() if on_gpu else {"arch": "cpu", "compute_units": 1, "device_name": "cpu"}
    ops = TunedOps(args.table or str(Path("no-table.json")), args.dtype, device)
    out = mlp(ops, x, p)
    error = (out.float() - reference(x, p)).abs().max().item()
    if not error <= 0.05 * max(1.0, reference(x, p).abs().max().item()):
        print(f"wrong output: max abs error {error:.4g}", file=sys.stderr)
        return 1
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        mlp(ops, x, p)
    sync()
    print(f"max_abs_error {error:.3g}")
    print(f"ms_per_step {(time.perf_counter() - start) * 1e3 / args.steps:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
