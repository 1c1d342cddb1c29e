"""Time triton_matmul configs side by side in one process: each config, and torch.matmul, measured by kerntune's
``measure`` (the default protocol unless --short) in ROUNDS rounds of rotating order, so that the machine's slow
drift lands on all alike. Prints one JSON line per measurement and a summary: each config's median of round
medians and its ratio to the fastest. Used to check search winners against each other (is the race's winner
within 2% of the exhaustive best?) and, first, to find why one config timed differently in two runs.

Usage: python3 benchmarks/search-efficiency/time_configs.py --shape 16,4096,4096 [--rounds 3] [--short] [--out F.json]
CONFIG... (CONFIG: a config key, ``BLOCK_M=16,BLOCK_N=64,...``; NAME=@FILE reads a ``kerntune tune --json`` report's
winner.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def parse(key: str) -> dict[str, int]:
    return {k: int(v) for k, v in (item.split("=") for item in key.split(","))}


def config_arg(text: str) -> tuple[str, dict[str, int]]:
    """``KEY`` → (KEY, its values); ``NAME=@report.json`` → (NAME, that report's winner)."""
    if "=@" in text:
        name, path = text.split("=@", 1)
        report = json.loads(Path(path).read_text())
        winner = report["shapes"][0].get("winner") or {}
        if not winner.get("config"):
            raise SystemExit(f"{path}: no winner in the report")
        return name, {k: int(v) for k, v in winner["config"].items()}
    return text, parse(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="16,4096,4096", help="M,N,K")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", action="store_true", help="warm-up 100 ms, budget 500 ms (not the default)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("configs", nargs="+")
    opts = parser.parse_args()

    import torch

    from kerntune.backends.torch import TorchBackend
    from kerntune.measure.protocol import MeasureOptions, measure
    from kerntune.tune.spec import load_spec

    backend = TorchBackend("cuda")
    telemetry = backend.telemetry()
    spec = sys.modules[load_spec(str(ROOT / "kernels" / "triton_gemm")).problem.make_inputs.__module__]
    m, n, k = (int(x) for x in opts.shape.split(","))
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ref = a.double() @ b.double()
    args = {"a": a, "b": b, "c": c, "M": m, "N": n, "K": k}
    launches: dict[str, Any] = {"torch.matmul": lambda: torch.matmul(a, b, out=c)}
    errors: dict[str, float] = {}
    for name, values in dict(config_arg(text) for text in opts.configs).items():
        meta = {**values, "M": m, "N": n, "K": k}
        launches[name] = lambda meta=meta: spec.launch(spec.matmul_kernel, args, meta)
    for name, launch in launches.items():  # compile, and check each computes the product (a wrong one is named)
        c.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        errors[name] = float(torch.linalg.vector_norm(c.double() - ref) / torch.linalg.vector_norm(ref))
    options = MeasureOptions(warmup_ms=100, budget_ms=500) if opts.short else MeasureOptions()
    medians: dict[str, list[float]] = {name: [] for name in launches}
    names = list(launches)
    for r in range(opts.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            got = measure(backend, [launches[name]], options, telemetry)
            medians[name].append(got.median_ms)
            row = {
                "round": r,
                "config": name,
                "median_ms": round(got.median_ms, 5),
                "n": got.n,
                "q10": round(got.quantile(0.1), 5),
                "q90": round(got.quantile(0.9), 5),
                "telemetry": got.conditions.telemetry,
            }
            print(json.dumps(row, default=str), flush=True)
    summary = {name: statistics.median(v) for name, v in medians.items()}
    best = min(v for name, v in summary.items() if name != "torch.matmul")
    result = {
        "shape": opts.shape,
        "protocol": "short" if opts.short else "default",
        "rounds": medians,
        "rel_error": errors,
        "median_ms": summary,
        "vs_fastest_config": {name: v / best for name, v in summary.items()},
    }
    print(json.dumps({key: result[key] for key in ("median_ms", "vs_fastest_config", "rel_error")}, indent=1))
    if opts.out:
        opts.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
