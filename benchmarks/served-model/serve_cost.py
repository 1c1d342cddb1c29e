"""Host cost of a served GEMM call against the library's own call, timed interleaved in one process.

    python benchmarks/served-model/serve_cost.py [--backend CUDA|CPU] [--config plain|tma] [--rounds 20] [--calls 2000]
        [--out FILE.json]

The sides, in A B C ... C B A order per round (each round: every side once per order position), on one small
``torch.mm`` (M=16, N=64, K=64, B an nn.Linear-style transpose, bf16 on CUDA, fp16 on the CPU):
- ``library``: no table served, the library's kernel;
- ``miss``: ``kerntune.runtime.serve`` installed with a table that does not hold the call's key, so every call
  goes through the native gate (C++) to the kernel the library had registered (the cost every uncovered GEMM pays);
- ``hit`` (CUDA only): the table holds the key, so the gate calls the served kernel, which launches
  kernels/triton_gemm's kernel at the ``--config`` named: ``plain`` (pointers and integers) or ``tma`` (its TMA
  kernel, whose operands are tensor descriptors);
- ``miss_python`` and ``hit_python``: the same through the Python served kernel (``KERNTUNE_NATIVE_GATE=off``).
``planned_forms`` says whether the gate launched the hit from C++ (a launch plan) or called the Python served
kernel for it.
A side's figure is host microseconds per call: wall time of a block of calls issued back to back, the device
synchronised before each block and not timed (a full launch queue would make host time read GPU time; the
kernel is a few microseconds, so the queue never fills inside a block). Printed and written: per side the median
over rounds, and per served side the median of its per-round difference from ``library`` with the lowest and
highest round.

Where a hit's time goes (``pieces``, CUDA only), each piece called alone in blocks of the same size, the pieces
interleaved round by round like the sides: ``library`` (torch.mm), ``read`` (the spec's ``served_shape``: the
call's key), ``empty`` (the output's allocation), ``launch_jit`` (``served_run``: allocation and launch through
Triton's JIT), ``launch_direct`` (the key's prepared launcher, which launches the compiled kernel directly).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from kerntune.runtime.keys import problem_source_hash, torch_device_fields  # noqa: E402
from kerntune.runtime.serving import cpu_device_fields, load_served_spec, serve  # noqa: E402
from kerntune.settings import Settings  # noqa: E402

SPEC = ROOT / "kernels" / "triton_gemm"
SHAPE = {"M": 16, "N": 64, "K": 64, "layout": "NT", "bias": 0}
CONFIG = {
    "BLOCK_M": 16,
    "BLOCK_N": 64,
    "BLOCK_K": 64,
    "GROUP_M": 8,
    "SPLIT_K": 1,
    "FUSED": 0,
    "TMA": 0,
    "PERSISTENT": 0,
    "num_warps": 4,
    "num_stages": 2,
}
CONFIGS = {"plain": CONFIG, "tma": {**CONFIG, "BLOCK_N": 32, "TMA": 1}}


def _table(folder: Path, device: dict[str, Any], dtype: str, hit: bool, config: dict[str, Any]) -> Path:
    spec = load_served_spec(SPEC)
    shape = dict(SHAPE) if hit else {**SHAPE, "N": SHAPE["N"] * 2}  # a miss: another N
    key = {"op": spec.name, "source": problem_source_hash(spec), "dtype": dtype, **device, **shape}
    path = folder / ("hit.json" if hit else "miss.json")
    path.write_text(
        json.dumps(
            {
                "schema": 1,
                "validators": {},
                "entries": [{"key": key, "config": config, "status": "measured", "spec": str(SPEC)}],
            }
        )
    )
    return path


def _host_us(a: torch.Tensor, b: torch.Tensor, calls: int, sync: Any) -> float:
    sync()
    start = time.perf_counter_ns()
    for _ in range(calls):
        torch.mm(a, b)
    elapsed = time.perf_counter_ns() - start
    sync()
    return elapsed / calls / 1e3


def _pieces(
    a: torch.Tensor, b: torch.Tensor, rounds: int, calls: int, dtype: torch.dtype, config: dict[str, Any]
) -> dict[str, Any]:
    spec = load_served_spec(SPEC)
    serve_ = spec.serve
    assert serve_ is not None and serve_.prepare is not None
    shape = {k: v for k, v in SHAPE.items()}
    launcher = serve_.prepare("aten::mm", shape, config)
    launcher((a, b), {})  # the key's first call: compile, and the direct launcher made
    serve_.run("aten::mm", shape, config, (a, b), {})
    pieces: dict[str, Any] = {
        "library": lambda: torch.mm(a, b),
        "read": lambda: serve_.shape("aten::mm", (a, b), {}),
        "empty": lambda: torch.empty((SHAPE["M"], SHAPE["N"]), dtype=dtype, device=a.device),
        "launch_jit": lambda: serve_.run("aten::mm", shape, config, (a, b), {}),
        "launch_direct": lambda: launcher((a, b), {}),
    }
    times: dict[str, list[float]] = {n: [] for n in pieces}
    for _ in range(rounds):
        for name in [*pieces, *reversed(pieces)]:
            fn = pieces[name]
            torch.cuda.synchronize()
            start = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter_ns() - start) / calls / 1e3)
            torch.cuda.synchronize()
    return {"median_us": {n: statistics.median(t) for n, t in times.items()}, "blocks_us": times}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--backend", choices=("CUDA", "CPU"), default="CUDA")
    p.add_argument("--config", choices=sorted(CONFIGS), default="plain", help="the hit's kernel form")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--out")
    args = p.parse_args()
    cuda = args.backend == "CUDA"
    config = CONFIGS[args.config]
    device = torch.device("cuda" if cuda else "cpu")
    dtype = torch.bfloat16 if cuda else torch.float16
    fields = torch_device_fields() if cuda else cpu_device_fields()
    a = torch.randn(SHAPE["M"], SHAPE["K"], device=device).to(dtype)
    b = torch.randn(SHAPE["N"], SHAPE["K"], device=device).to(dtype).t()  # an nn.Linear weight, as mm sees it
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    folder = Path(tempfile.mkdtemp(prefix="kerntune-serve-cost-"))
    tables = {"miss": _table(folder, fields, str(dtype).removeprefix("torch."), hit=False, config=config)}
    if cuda:
        tables["hit"] = _table(folder, fields, str(dtype).removeprefix("torch."), hit=True, config=config)
    native, python = Settings.from_env(), Settings(native_gate="off")
    gates, planned = {}, {}
    for name in list(tables):
        tables[f"{name}_python"] = tables[name]
        served = serve(
            tables[name], backend=args.backend, specs=[SPEC], settings=native
        )  # builds the gate once, outside timing
        for _ in range(3):  # decided, then planned: as in every timed block
            torch.mm(a, b)
        gates[name] = served.stats()["gate"]
        planned[name] = served.native.planned if served.native is not None else 0
        served.close()
    # One serving at a time (a process serves one table): each is installed only while its side is timed.

    def side(name: str) -> float:
        if name == "library":
            return _host_us(a, b, args.calls, sync)
        again = serve(
            tables[name], backend=args.backend, specs=[SPEC], settings=python if name.endswith("_python") else native
        )
        try:
            for _ in range(3):  # outside the block: the form's decision, the kernel's compile, the gate's plan
                torch.mm(a, b)
            return _host_us(a, b, args.calls, sync)
        finally:
            again.close()

    names = ["library", *tables]
    times: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(args.rounds):
        for name in [*names, *reversed(names)]:  # A B C C B A: every side in each position once per round
            times[name].append(side(name))
    rounds = len(times["library"])
    result: dict[str, Any] = {
        "backend": args.backend,
        "device": fields["device_name"],
        "shape": SHAPE,
        "config": config,
        "calls_per_block": args.calls,
        "blocks_per_side": rounds,
        "torch": torch.__version__,
        "gate": gates,
        "planned_forms": planned,
        "median_us": {n: statistics.median(t) for n, t in times.items()},
    }
    for name in tables:
        diffs = sorted(times[name][i] - times["library"][i] for i in range(rounds))
        result[f"{name}_over_library_us"] = {"median": statistics.median(diffs), "low": diffs[0], "high": diffs[-1]}
    pieces = _pieces(a, b, args.rounds, args.calls, dtype, config) if cuda else None
    if pieces is not None:
        result["pieces_median_us"] = pieces["median_us"]
    print(json.dumps(result, indent=1))
    for name in tables:
        over = result[f"{name}_over_library_us"]
        print(
            f"{name:>12}: {over['median']:+.2f} us per call over the library's (rounds {over['low']:+.2f} .. "
            f"{over['high']:+.2f})"
        )
    if args.out:
        Path(args.out).write_text(
            json.dumps({**result, "blocks_us": times, "pieces_blocks_us": pieces and pieces["blocks_us"]}, indent=1)
        )


if __name__ == "__main__":
    main()
