"""Nsight Compute counters of the Gluon GEMM beside the library's kernel at the shapes asked for: each launch in its
own process under ncu (``kerntune profile``'s harness: compiled, warmed up three times, one launch inside the NVTX
range ncu keeps, caches flushed by ncu before it; clocks as found, ``--clock-control none``).

Usage: python benchmarks/gemm-candidates/counters.py OUT.json CONFIG_JSON M,N,K,LAYOUT [M,N,K,LAYOUT ...]
CONFIG_JSON is one Gluon config, e.g. '{"BLOCK_N": 256, "SCHEDULE": 0, "STAGES": 3, ...}'. Prints one line per
kernel (duration, compute and memory throughput as % of peak, occupancy, registers). Exit 2 on bad arguments."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from kerntune.devices.counters import profiler_for
from kerntune.errors import UsageError
from kerntune.inspect.profile import profile_one

SPEC = str(Path(__file__).resolve().parents[2] / "kernels" / "gluon_gemm")


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.split("\n\n")[1].splitlines()[0], file=sys.stderr)
        return 2
    out = Path(argv[0])
    try:
        config = json.loads(argv[1])
        shapes = []
        for text in argv[2:]:
            m, n, k, layout = text.split(",")
            shapes.append({"M": int(m), "N": int(n), "K": int(k), "layout": layout, "bias": 0})
        tool = profiler_for("nvidia")
    except (ValueError, UsageError) as exc:
        print(f"counters: {exc} (shapes are M,N,K,LAYOUT; the config is JSON)", file=sys.stderr)
        return 2
    rows = []
    for shape in shapes:
        for label, cfg in (("torch.matmul", None), ("gluon", config)):
            payload = {"spec_path": SPEC, "device": "", "shape": shape, "dtype": "bfloat16", "config": cfg or {},
                       "baseline": "torch.matmul" if cfg is None else None, "warmup": 3}  # fmt: skip
            with tempfile.TemporaryDirectory(prefix="kerntune-gemm-counters-") as tmp:
                try:
                    kernels = profile_one(tool, payload, Path(tmp))
                except UsageError as exc:  # one launch's failure is recorded; the others go on
                    kernels = [{"error": str(exc)[-300:]}]
            rows.append({"shape": shape, "label": label, "config": cfg, "kernels": kernels})
            for kernel in kernels:
                metrics = kernel.get("metrics", {})
                print(
                    f"{shape['M']}x{shape['N']}x{shape['K']} {shape['layout']} {label:12s} "
                    f"{str(kernel.get('kernel', kernel.get('error', '')))[:48]:48s} "
                    + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items()),
                    flush=True,
                )
            out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
