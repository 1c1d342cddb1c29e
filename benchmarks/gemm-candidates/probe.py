"""Probe, on a CUDA GPU, every kind of GEMM candidate for one call beside the library: the Gluon warp-specialized
kernel (kernels/gluon_gemm) for correctness and speed, cuBLASLt's own heuristic algorithms through nvmath-python,
and whether PyTorch's TunableOp races cuBLASLt algorithms on this build. Timed with CUDA events, the candidates
interleaved call by call (A B B A), the L2 flushed by a 2x-L2 write before every call; medians of ``--reps``.

Usage: python benchmarks/gemm-candidates/probe.py [--reps 30] [--out DIR]. PROBE_CONFIGS names the Gluon configs
(default all); PROBE_SHAPES a payoff shapes file whose shapes with M >= PROBE_MIN_M (default 1024) are timed in
place of the built-in list."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def load_spec(path: Path):  # type: ignore[no-untyped-def]
    found = importlib.util.spec_from_file_location(path.parent.name + "_spec", path)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    sys.modules[found.name] = module  # dataclasses resolve their module by name
    found.loader.exec_module(module)
    return module


def inputs(m: int, n: int, k: int, layout: str, bias: int, seed: int = 0) -> dict:
    g = torch.Generator(device="cuda").manual_seed(seed)

    def op(r: int, c: int, t: bool) -> torch.Tensor:
        return (
            torch.randn((c, r), generator=g, device="cuda").bfloat16().t()
            if t
            else torch.randn((r, c), generator=g, device="cuda").bfloat16()
        )

    return {
        "a": op(m, k, layout[0] == "T"),
        "b": op(k, n, layout[1] == "T"),
        "c": torch.empty((m, n), device="cuda", dtype=torch.bfloat16),
        "bias": torch.randn((n,), generator=g, device="cuda").bfloat16() if bias else None,
    }


def library(x: dict) -> None:
    if x["bias"] is not None:
        torch.addmm(x["bias"], x["a"], x["b"], out=x["c"])
    else:
        torch.mm(x["a"], x["b"], out=x["c"])


def rel_err(x: dict) -> float:
    ref = x["a"].double() @ x["b"].double()
    if x["bias"] is not None:
        ref = ref + x["bias"].double()
    out = x["c"].double()
    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).norm() / ref.norm())


FLUSH = None


def flush() -> None:
    global FLUSH
    if FLUSH is None:
        FLUSH = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1, device="cuda")
    FLUSH.fill_(1.0)


def interleaved(fns: dict, reps: int) -> dict:
    """Median ms of each fn, called in rotating order each round, each after an L2 flush."""
    names = list(fns)
    times: dict = {n: [] for n in names}
    for f in fns.values():  # warm up (compile, plan)
        f()
    torch.cuda.synchronize()
    for r in range(reps):
        order = names if r % 2 == 0 else names[::-1]
        events = []
        for n in order:
            flush()
            # The device spins while the host enqueues the call: its host time (descriptors, the JIT's
            # binding) would otherwise sit between the events as idle device time.
            torch.cuda._sleep(400_000)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fns[n]()
            e.record()
            events.append((n, s, e))
        torch.cuda.synchronize()
        for n, s, e in events:
            times[n].append(s.elapsed_time(e))
    return {n: statistics.median(v) for n, v in times.items()}


def profiled_ratio(library_fn, mine, mine_prefix: str, reps: int) -> dict:  # type: ignore[no-untyped-def]
    """The second timer: CUPTI kernel durations (torch.profiler) of the library's GEMM and ours, called
    alternately after a flush; the flush's own kernel is told apart by name."""
    from torch.profiler import ProfilerActivity, profile

    library_fn(), mine()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            flush()
            library_fn()
            flush()
            mine()
        torch.cuda.synchronize()
    ours, theirs, names = [], [], set()
    for e in prof.events():
        if e.device_type.name != "CUDA" or "fill" in e.name.lower() or "elementwise" in e.name or "sleep" in e.name:
            continue
        (ours if e.name.startswith(mine_prefix) else theirs).append(e.device_time_total)
        if not e.name.startswith(mine_prefix):
            names.add(e.name[:60])
    if not ours or not theirs:
        return {"error": "no kernels seen"}
    # Per call: a library call can run more than one kernel (a split-K reduction), so sums over calls.
    return {
        "ours_us": sum(ours) / reps,
        "library_us": sum(theirs) / reps,
        "speedup": sum(theirs) / sum(ours),
        "n": [len(ours), len(theirs)],
        "library_kernels": sorted(names),
    }


def file_shapes(path: Path, min_m: int) -> list[tuple[int, int, int, str, int]]:
    """The shapes of a payoff shapes file (benchmarks/specs/gemm_payoff_shapes.txt) with M >= min_m, in order."""
    payoff = load_spec(ROOT / "benchmarks" / "gemm-payoff" / "payoff_shapes.py")
    return [item.key for item in payoff.read_payoff_shapes(path) if item.key[0] >= min_m]


def gluon_part(reps: int, log: list, shapes: list[tuple[int, int, int, str, int]] | None) -> None:
    spec = load_spec(ROOT / "kernels" / "gluon_gemm" / "spec.py")
    configs = {
        "coop256x3": {
            "BLOCK_N": 256,
            "SCHEDULE": 0,
            "STAGES": 3,
            "GROUP": 8,
            "RASTER_N": 0,
            "LOAD_REGS": 40,
            "MMA_REGS": 232,
        },
        "coop128x5": {
            "BLOCK_N": 128,
            "SCHEDULE": 0,
            "STAGES": 5,
            "GROUP": 8,
            "RASTER_N": 0,
            "LOAD_REGS": 40,
            "MMA_REGS": 232,
        },
        "coop128x6": {
            "BLOCK_N": 128,
            "SCHEDULE": 0,
            "STAGES": 6,
            "GROUP": 8,
            "RASTER_N": 0,
            "LOAD_REGS": 24,
            "MMA_REGS": 232,
        },
        "ping128x4": {
            "BLOCK_N": 128,
            "SCHEDULE": 1,
            "STAGES": 4,
            "GROUP": 8,
            "RASTER_N": 0,
            "LOAD_REGS": 40,
            "MMA_REGS": 232,
        },
        "ping128x5": {
            "BLOCK_N": 128,
            "SCHEDULE": 1,
            "STAGES": 5,
            "GROUP": 8,
            "RASTER_N": 0,
            "LOAD_REGS": 24,
            "MMA_REGS": 240,
        },
    }
    # The C tile stored in two halves through a half-size buffer: room for one more ring stage.
    configs["coop256x4s2"] = {**configs["coop256x3"], "STAGES": 4, "EPI_SPLIT": 2}
    configs["ping128x5s2"] = {**configs["ping128x4"], "STAGES": 5, "EPI_SPLIT": 2}
    configs["ping128x6s2"] = {**configs["ping128x4"], "STAGES": 6, "EPI_SPLIT": 2, "LOAD_REGS": 24, "MMA_REGS": 240}
    # Where the last wave of tiles is partial and small: whole waves first, the rest as one wave of half tiles.
    configs["coop256x4s2t"] = {**configs["coop256x4s2"], "TAIL_SPLIT": 1}
    # The same last wave cut along K inside the one launch (each tile's slices on their own SMs).
    configs["coop256x4s2k"] = {**configs["coop256x4s2"], "TAIL_K": 1}
    configs["coop128x5k"] = {**configs["coop128x5"], "TAIL_K": 1}
    configs["ping128x5s2k"] = {**configs["ping128x5s2"], "TAIL_K": 1}
    wanted = os.environ.get("PROBE_CONFIGS")
    if wanted:
        configs = {k: v for k, v in configs.items() if k in wanted.split(",")}
    checks = [
        (256, 4096, 4096, "NT", 0),
        (1000, 3000, 2048, "NN", 1),
        (2048, 2048, 4096, "TN", 0),
        (384, 1024, 1000, "TT", 1),
        (4096, 4096, 4096, "NT", 1),
        (1000, 14000, 1000, "NN", 1),  # a partial last wave that TAIL_SPLIT splits and TAIL_K cuts in 3
        (1024, 14336, 4096, "NT", 0),
        (2048, 32000, 2048, "NT", 0),  # TAIL_K: 20 tiles of 128x256 left, 6 slices each
    ]
    for shape in checks:
        for name, cfg in configs.items():
            x = inputs(*shape, seed=1)
            x["c"].fill_(float("nan"))
            try:
                spec.run_gemm(x["a"], x["b"], x["c"], x["bias"], cfg)
                torch.cuda.synchronize()
                err = rel_err(x)
            except Exception as exc:
                err = f"{type(exc).__name__}: {str(exc)[-300:]}"
            log.append({"part": "gluon-check", "shape": shape, "config": name, "rel_err": err})
            print("check", shape, name, err, flush=True)
    timed = [
        (1024, 14336, 4096, "NT", 0),
        (2048, 4096, 4096, "NT", 0),
        (4096, 4096, 4096, "NT", 0),
        (8192, 8192, 8192, "NT", 0),
        (32000, 2048, 2048, "TN", 0),
        (2048, 2048, 8192, "NN", 0),
        (256, 8192, 8192, "NT", 0),
        (2048, 4096, 4096, "NT", 1),
    ]
    if shapes is not None:
        timed = shapes
    for shape in timed:
        x = inputs(*shape)
        fns = {"torch": lambda x=x: library(x)}
        for name, cfg in configs.items():
            fns[name] = lambda x=x, cfg=cfg: spec.run_gemm(x["a"], x["b"], x["c"], x["bias"], cfg)
        try:
            med = interleaved(fns, reps)
        except Exception as exc:
            print("timing failed", shape, exc)
            continue
        flops = 2 * shape[0] * shape[1] * shape[2]
        row = {n: {"ms": v, "speedup": med["torch"] / v, "tflops": flops / v / 1e9} for n, v in med.items()}
        best = max((n for n in row if n != "torch"), key=lambda n: row[n]["speedup"])
        cupti = profiled_ratio(fns["torch"], fns[best], "gemm_ws_kernel", reps)
        log.append({"part": "gluon-time", "shape": shape, "times": row, "best": best, "cupti": cupti})
        print("  cupti", best, cupti, flush=True)
        print(
            "time",
            shape,
            f"torch {med['torch'] * 1e3:.1f}us {row['torch']['tflops']:.0f}TF",
            " ".join(f"{n}={row[n]['speedup']:.3f}" for n in row if n != "torch"),
            "best",
            best,
            flush=True,
        )


def nvmath_part(reps: int, log: list) -> None:
    try:
        import nvmath
        from nvmath.linalg.advanced import Matmul, MatmulEpilog
    except Exception as exc:
        print("nvmath unavailable:", exc)
        log.append({"part": "nvmath", "error": str(exc)})
        return
    print("nvmath", nvmath.__version__, flush=True)
    for shape in [
        (4096, 4096, 4096, "NT", 0),
        (256, 8192, 8192, "NT", 0),
        (32000, 2048, 2048, "TN", 0),
        (16, 50257, 768, "NN", 0),
        (2048, 4096, 4096, "NT", 1),
    ]:
        x = inputs(*shape)
        try:
            # Row-major C = A.B is column-major C^T = B^T.A^T: cuBLASLt's bias epilogue wants column-major output.
            mm = Matmul(x["b"].t(), x["a"].t())
            kw = {"epilog": MatmulEpilog.BIAS, "epilog_inputs": {"bias": x["bias"]}} if x["bias"] is not None else {}
            t0 = time.perf_counter()
            algos = mm.plan(preferences={"limit": 16}, **kw)
            plan_ms = (time.perf_counter() - t0) * 1e3
            fns = {"torch": lambda x=x: library(x)}
            for i, al in enumerate(algos):
                fns[f"algo{i}"] = lambda mm=mm, al=al: mm.execute(algorithm=al)
            med = interleaved(fns, reps)
            out = mm.execute(algorithm=algos[0]).t()
            torch.cuda.synchronize()
            print("nvmath out strides", tuple(out.shape), out.stride(), flush=True)
            ref = x["a"].double() @ x["b"].double() + (x["bias"].double() if x["bias"] is not None else 0)
            err = float((out.double() - ref).norm() / ref.norm())
            desc = [str(getattr(al, "tile", "")) + "/" + str(getattr(al, "stages", "")) for al in algos]
            # host cost of one execute (no sync): mean over 200 calls
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(200):
                mm.execute(algorithm=algos[0])
            host_us = (time.perf_counter() - t0) / 200 * 1e6
            torch.cuda.synchronize()
            row = {n: med["torch"] / v for n, v in med.items()}
            log.append(
                {
                    "part": "nvmath",
                    "shape": shape,
                    "n_algos": len(algos),
                    "plan_ms": plan_ms,
                    "speedups": row,
                    "algos": desc,
                    "rel_err_algo0": err,
                    "host_us_execute": host_us,
                }
            )
            best = max((n for n in row if n != "torch"), key=lambda n: row[n])
            print(
                "nvmath",
                shape,
                len(algos),
                "algos; plan",
                f"{plan_ms:.1f}ms",
                "best",
                best,
                f"{row[best]:.3f}",
                "algo0",
                f"{row.get('algo0', 0):.3f}",
                "err",
                f"{err:.1e}",
                f"execute host {host_us:.1f}us",
                flush=True,
            )
        except Exception as exc:
            import traceback

            traceback.print_exc()
            log.append({"part": "nvmath", "shape": shape, "error": f"{type(exc).__name__}: {exc}"})


def cublaslt_serve_part(log: list) -> None:
    """The cuBLASLt spec's served launcher: planned on its first call, re-pointed on later ones (fresh operands)."""
    spec = load_spec(ROOT / "kernels" / "cublaslt_gemm" / "spec.py")
    for shape in [(2048, 4096, 4096, "NT", 1), (64, 4096, 4096, "NT", 0)]:
        m, n, k, layout, bias = shape
        op = "aten::addmm" if bias else "aten::mm"
        launcher = spec.served_prepare(op, {"M": m, "N": n, "K": k, "layout": layout, "bias": bias}, {"ALGO": 1})
        errs = []
        for seed in range(3):
            x = inputs(*shape, seed=seed)
            args = (x["bias"], x["a"], x["b"]) if bias else (x["a"], x["b"])
            x["c"] = launcher(args, {})
            torch.cuda.synchronize()
            errs.append(rel_err(x))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            launcher(args, {})
        host_us = (time.perf_counter() - t0) / 200 * 1e6
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            library(x)
        lib_us = (time.perf_counter() - t0) / 200 * 1e6
        torch.cuda.synchronize()
        print(
            "cublaslt served",
            shape,
            "errs",
            [f"{e:.1e}" for e in errs],
            f"host {host_us:.1f}us vs library {lib_us:.1f}us",
            flush=True,
        )
        log.append(
            {"part": "cublaslt-serve", "shape": shape, "errs": errs, "host_us": host_us, "library_host_us": lib_us}
        )


PING = r"""
import sys, torch, json
sys.path.insert(0, sys.argv[1] + "/benchmarks/gemm-candidates")
import probe
spec = probe.load_spec(probe.ROOT / "kernels" / "gluon_gemm" / "spec.py")
m, n, k, layout, bias, bn, stages = json.loads(sys.argv[2])
x = probe.inputs(m, n, k, layout, bias, seed=1)
cfg = {"BLOCK_N": bn, "SCHEDULE": 1, "STAGES": stages, "GROUP": 8, "RASTER_N": 0, "LOAD_REGS": 40, "MMA_REGS": 232}
spec.run_gemm(x["a"], x["b"], x["c"], x["bias"], cfg)
torch.cuda.synchronize()
print("rel_err", probe.rel_err(x))
"""


def ping_part(log: list) -> None:
    """Which ping-pong launches fail: each case alone in its own process (a fault poisons the context)."""
    cases = [
        (256, 4096, 4096, "NT", 0),
        (256, 4096, 4096, "NT", 1),
        (1024, 3072, 2048, "NN", 0),
        (1000, 3072, 2048, "NT", 0),
        (1024, 3000, 2048, "NT", 0),
        (1024, 3072, 2000, "NT", 0),
        (1152, 4096, 4096, "NT", 0),
        (1280, 4096, 4096, "NT", 0),
    ]
    for case in cases:
        r = subprocess.run(
            [sys.executable, "-c", PING, str(ROOT), json.dumps([*case, 128, 4])],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "CUDA_LAUNCH_BLOCKING": "1"},
        )
        tail = (r.stdout + r.stderr).strip().splitlines()[-1:] or [""]
        print("ping", case, "rc", r.returncode, tail[0][:160], flush=True)
        log.append({"part": "ping", "case": case, "rc": r.returncode, "tail": tail[0]})


TUNABLE = r"""
import torch, os, sys
m, n, k = 256, 8192, 8192
a = torch.randn(m, k, device='cuda').bfloat16(); w = torch.randn(n, k, device='cuda').bfloat16()
torch.cuda.tunable.enable(True); torch.cuda.tunable.tuning_enable(True)
torch.cuda.tunable.set_filename(sys.argv[1])
for _ in range(3): torch.nn.functional.linear(a, w)
torch.cuda.synchronize()
getattr(torch.cuda.tunable, 'write_file', lambda *a: None)()  # 2.11 has none: written at exit
print('tunable results:', torch.cuda.tunable.get_results())
print('validators:', torch.cuda.tunable.get_validators())
print('api:', [n for n in dir(torch.cuda.tunable) if not n.startswith('_')])
"""


def tunable_part(out: Path, log: list) -> None:
    path = out / "tunableop_probe.csv"
    r = subprocess.run(
        [sys.executable, "-c", TUNABLE, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTORCH_TUNABLEOP_VERBOSE": "1"},
    )
    print("tunableop rc", r.returncode, r.stdout[-1500:], r.stderr[-1500:])
    log.append({"part": "tunableop", "rc": r.returncode, "stdout": r.stdout[-4000:], "stderr": r.stderr[-4000:]})


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--parts", default="gluon,nvmath,serve,tunable")
    o = p.parse_args()
    out = Path(o.out)
    shapes = None
    if os.environ.get("PROBE_SHAPES"):  # a shapes file: its compute-bound shapes (M >= PROBE_MIN_M, default 1024)
        try:
            shapes = file_shapes(Path(os.environ["PROBE_SHAPES"]), int(os.environ.get("PROBE_MIN_M", "1024")))
        except (OSError, ValueError) as exc:
            print(f"probe: PROBE_SHAPES or PROBE_MIN_M: {exc}", file=sys.stderr)
            return 2
    log: list = [
        {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": __import__("triton").__version__}
    ]
    print(log[0], flush=True)
    if "nvmath" in o.parts:
        nvmath_part(o.reps, log)
    if "serve" in o.parts:
        try:
            cublaslt_serve_part(log)
        except Exception:
            import traceback

            traceback.print_exc()
    if "tunable" in o.parts:
        tunable_part(out, log)
    if "ping" in o.parts:
        ping_part(log)
    if "gluon" in o.parts:
        gluon_part(o.reps, log, shapes)
    (out / "gemm_candidates_probe.json").write_text(json.dumps(log, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
