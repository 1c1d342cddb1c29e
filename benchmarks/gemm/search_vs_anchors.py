"""GEMM against the anchors (the gemm suite): kerntune's gated winners against torch.matmul (cuBLAS) and against
triton.autotune with the Triton matmul tutorial's 16 configs, bf16, on the 10 LLM shapes.

Phase 1 (``--tune``): one tuning run of kernels/triton_gemm over the shapes (``kerntune.tune.run``, as
``kerntune tune`` does; default strategy), its store under --out, progress lines and wall time printed.
Phase 2 (``--compare``, one process): per shape,
the three implementations are gated against an fp64 reference and then timed by kerntune's own ``measure``
(same protocol for all three) in 3 rounds of rotating order; the tutorial's autotune runs first (its own
do_bench picks a config; the time it took is recorded) and its chosen config is then launched directly, so its
Python dispatch cost (+~20 µs a call) does not enter the comparison. Protocol: eager cold (kerntune's
default: L2 flushed before each launch); with --graph also graph mode over rotating input copies (no host
launch cost).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SHAPES = [(m, n, k) for m in (16, 128, 4096) for n, k in ((4096, 4096), (14336, 4096), (4096, 14336))]
SHAPES.append((8192, 8192, 8192))
ROOT = Path(__file__).resolve().parents[2]


class _Lines:
    """Progress as timestamped lines on stdout (a device call's log shows where the time went)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def planned(self, run: Any, total: int) -> None:
        print(f"[{time.perf_counter() - self.start:7.1f}s] run {run.id}: up to {total} evaluations", flush=True)

    def finished(self, label: str, status: str, detail: str) -> None:
        print(f"[{time.perf_counter() - self.start:7.1f}s] {label}: {status} {detail[:120]}", flush=True)


def tune(out: Path, shapes: list[tuple[int, int, int]], strategy: str, tag: str, budget: list[str]) -> None:
    """One tuning run over all the shapes (one compile pool, one set of confirmation processes)."""
    from kerntune.cli.app import parse_budget
    from kerntune.report.summary import build_report, report_json
    from kerntune.settings import Settings
    from kerntune.store import Store
    from kerntune.tune.request import TuneRequest
    from kerntune.tune.run import tune as run_tune

    settings = Settings.from_env()
    store = Store(out / "store")
    request = TuneRequest(
        spec=str(ROOT / "kernels" / "triton_gemm"),
        strategy=strategy,
        budget=parse_budget(budget),
        shapes=[{"M": str(m), "N": str(n), "K": str(k)} for m, n, k in shapes],
    )
    start = time.perf_counter()
    run = run_tune(request, settings, store, _Lines())
    wall = time.perf_counter() - start
    report = report_json(build_report(store, run))
    (out / f"tune-{tag}.json").write_text(json.dumps(report, indent=1))
    print(f"tune {tag}: {wall:.1f} s, stop: {run.stop_reason}", flush=True)
    path = out / "tune.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for name, row in shape_results(report, run.id, run_wall_s=wall).items():
        results[name] = row
        print(
            f"  {name}: winner {row['winner']}, {row['outcomes']}, {row['seconds']}",
            f"finalists {[(f['name'][:40], f['confirmed_median_ms']) for f in row['finalists'] or []]}",
            flush=True,
        )
    path.write_text(json.dumps(results, indent=1))


def shape_results(report: dict[str, Any], run_id: str, **extra: Any) -> dict[str, dict[str, Any]]:
    """Per shape ("MxNxK") of a run's report_json: its winner's config (None where none was timed), outcomes,
    seconds and finalists, plus ``extra``. What --compare reads from tune.json."""
    results = {}
    for shape in report["shapes"]:
        s = shape["shape"]
        results[f"{s['M']}x{s['N']}x{s['K']}"] = {
            **extra,
            "run": run_id,
            "winner": (shape.get("winner") or {}).get("config"),
            "outcomes": shape.get("outcomes"),
            "seconds": shape.get("seconds"),
            "finalists": shape.get("finalists"),
        }
    return results


def tutorial_kernel() -> Any:
    import triton
    import triton.language as tl

    def cfg(bm: int, bn: int, bk: int, stages: int, warps: int) -> Any:
        return triton.Config(
            {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8},
            num_stages=stages,
            num_warps=warps,
        )

    # The tutorial's get_cuda_autotune_config(): eight configs, then eight "good for fp8" ones.
    configs = [
        cfg(128, 256, 64, 3, 8),
        cfg(64, 256, 32, 4, 4),
        cfg(128, 128, 32, 4, 4),
        cfg(128, 64, 32, 4, 4),
        cfg(64, 128, 32, 4, 4),
        cfg(128, 32, 32, 4, 4),
        cfg(64, 32, 32, 5, 2),
        cfg(32, 64, 32, 5, 2),
        cfg(128, 256, 128, 3, 8),
        cfg(256, 128, 128, 3, 8),
        cfg(256, 64, 128, 4, 4),
        cfg(64, 256, 128, 4, 4),
        cfg(128, 128, 128, 4, 4),
        cfg(128, 64, 64, 4, 4),
        cfg(64, 128, 64, 4, 4),
        cfg(128, 32, 64, 4, 4),
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        stride_am,
        stride_ak,
        stride_bk,
        stride_bn,
        stride_cm,
        stride_cn,
        BLOCK_SIZE_M: tl.constexpr,
        BLOCK_SIZE_N: tl.constexpr,
        BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr,
    ):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c = accumulator.to(tl.bfloat16)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))

    return matmul_kernel


def compare_shape(m: int, n: int, k: int, winner: Any, rounds: int, ctx: dict[str, Any]) -> dict[str, Any]:
    """Gate and time the three implementations at one shape; return its row."""
    import torch
    import triton

    backend, telemetry, spec_module, autotuned, protocols, measure = (
        ctx["backend"],
        ctx["telemetry"],
        ctx["spec"],
        ctx["autotuned"],
        ctx["protocols"],
        ctx["measure"],
    )
    name = f"{m}x{n}x{k}"
    gen = torch.Generator(device="cuda").manual_seed(1)
    copies = []
    for _ in range(2):  # two input sets: 2 × (A + B) exceeds the 50 MB L2 at every shape here
        a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
        b = torch.randn(k, n, device="cuda", generator=gen).to(torch.bfloat16)
        copies.append((a, b, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
    ref = copies[0][0].double() @ copies[0][1].double()

    def ours(a: Any, b: Any, c: Any) -> Any:
        args = {"a": a, "b": b, "c": c, "M": m, "N": n, "K": k}
        return spec_module.launch(spec_module.matmul_kernel, args, {**winner, "M": m, "N": n, "K": k})

    def cublas(a: Any, b: Any, c: Any) -> Any:
        return torch.matmul(a, b, out=c)

    start = time.perf_counter()
    a0, b0, c0 = copies[0]
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    autotuned[grid](
        a0, b0, c0, m, n, k, a0.stride(0), a0.stride(1), b0.stride(0), b0.stride(1), c0.stride(0), c0.stride(1)
    )
    torch.cuda.synchronize()
    autotune_s = time.perf_counter() - start
    best = autotuned.best_config
    direct = autotuned.fn

    def tutorial(a: Any, b: Any, c: Any) -> Any:
        kw = dict(best.kwargs)
        g = (triton.cdiv(m, kw["BLOCK_SIZE_M"]) * triton.cdiv(n, kw["BLOCK_SIZE_N"]),)
        return direct[g](
            a,
            b,
            c,
            m,
            n,
            k,
            a.stride(0),
            a.stride(1),
            b.stride(0),
            b.stride(1),
            c.stride(0),
            c.stride(1),
            **kw,
            num_warps=best.num_warps,
            num_stages=best.num_stages,
        )

    impls = {"torch.matmul": cublas, "triton.autotune (tutorial 16)": tutorial}
    if winner:
        impls["kerntune"] = ours
    errors = {}
    for label, fn in impls.items():
        c0.fill_(float("nan"))
        fn(a0, b0, c0)
        torch.cuda.synchronize()
        errors[label] = float(torch.linalg.vector_norm(c0.double() - ref) / torch.linalg.vector_norm(ref))
    medians: dict[str, dict[str, list[float]]] = {p: {label: [] for label in impls} for p in protocols}
    for r in range(rounds):
        order = list(impls.items())
        order = order[r % len(order) :] + order[: r % len(order)]
        for protocol, options in protocols.items():
            for label, fn in order:
                launches = [lambda fn=fn, cp=cp: fn(*cp) for cp in copies]
                got = measure(backend, launches, options, telemetry, rotating_bytes=0)
                medians[protocol][label].append(got.median_ms)
    row: dict[str, Any] = {
        "winner": winner,
        "autotune_s": autotune_s,
        "autotune_config": str(best),
        "rel_error": errors,
    }
    for protocol in protocols:
        ms = {label: statistics.median(v) for label, v in medians[protocol].items()}
        row[protocol] = {"median_ms": ms, "round_medians_ms": medians[protocol]}
        if "kerntune" in ms:
            row[protocol]["kerntune_vs_torch"] = ms["torch.matmul"] / ms["kerntune"]
            row[protocol]["kerntune_vs_autotune"] = ms["triton.autotune (tutorial 16)"] / ms["kerntune"]
        row[protocol]["autotune_vs_torch"] = ms["torch.matmul"] / ms["triton.autotune (tutorial 16)"]
    print(
        name,
        json.dumps(
            {
                p: {
                    key: (round(v, 5) if isinstance(v, float) else v)
                    for key, v in row[p].items()
                    if key != "round_medians_ms"
                }
                for p in protocols
            }
        ),
        f"errors {errors}",
        flush=True,
    )
    return row


def salvage(out: Path) -> dict[str, Any]:
    """Winners of a tuning run cut before it wrote tune.json (a device call's time limit): the report the store
    gives for its last run, ranked as ``kerntune report`` ranks an unfinished run; shapes it never reached have
    no winner and are compared without kerntune. Written to tune-salvaged.json so the log says it happened."""
    from kerntune.report.summary import build_report, report_json
    from kerntune.store import Store

    if not (out / "store").is_dir():
        sys.stderr.write(
            f"search_vs_anchors: neither {out / 'tune.json'} nor a store in {out / 'store'}: run --tune first\n"
        )
        raise SystemExit(2)
    store = Store(out / "store")
    run = store.get_run("last")
    report = report_json(build_report(store, run))
    results = shape_results(report, run.id, salvaged=run.status)
    (out / "tune-salvaged.json").write_text(json.dumps(results, indent=1))
    print(
        f"tune.json missing: winners salvaged from run {run.id} ({run.status}): "
        f"{sum(1 for r in results.values() if r['winner'])} of {len(results)} shapes",
        flush=True,
    )
    return results


def compare(out: Path, shapes: list[tuple[int, int, int]], rounds: int, graph: bool, tag: str) -> None:
    from kerntune.backends.torch import TorchBackend
    from kerntune.measure.protocol import MeasureOptions, measure
    from kerntune.tune.spec import load_spec

    tuned = json.loads((out / "tune.json").read_text()) if (out / "tune.json").exists() else salvage(out)
    backend = TorchBackend("cuda")
    telemetry = backend.telemetry()
    spec_module = sys.modules[load_spec(str(ROOT / "kernels" / "triton_gemm")).problem.make_inputs.__module__]
    autotuned = tutorial_kernel()
    protocols = {"eager-cold": MeasureOptions()}
    if graph:
        protocols["graph-rotating"] = MeasureOptions(mode="graph", regime="rotating")
    ctx = {
        "backend": backend,
        "telemetry": telemetry,
        "spec": spec_module,
        "autotuned": autotuned,
        "protocols": protocols,
        "measure": measure,
    }
    rows = {}
    for m, n, k in shapes:
        rows[f"{m}x{n}x{k}"] = compare_shape(m, n, k, (tuned.get(f"{m}x{n}x{k}") or {}).get("winner"), rounds, ctx)
    summary: dict[str, Any] = {}
    for protocol in protocols:
        for key in ("kerntune_vs_torch", "kerntune_vs_autotune", "autotune_vs_torch"):
            values = [r[protocol][key] for r in rows.values() if key in r[protocol]]
            if values:
                summary[f"{protocol} {key} geomean"] = math.exp(statistics.fmean(math.log(v) for v in values))
                summary[f"{protocol} {key} n"] = len(values)
    print(json.dumps(summary, indent=1), flush=True)
    (out / f"compare-{tag}.json").write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--tune", action="store_true")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--shapes", default="", help="M,N,K;M,N,K (default: the 10 LLM shapes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--budget", action="append", default=[], help="as kerntune tune --budget (45s/shape)")
    parser.add_argument("--graph", action="store_true", help="also compare in graph mode over rotating inputs")
    parser.add_argument("--tag", default="all", help="names this call's files (tune-TAG.json, compare-TAG.json)")
    opts = parser.parse_args()
    shapes = [tuple(int(x) for x in s.split(",")) for s in opts.shapes.split(";")] if opts.shapes else SHAPES
    opts.out.mkdir(parents=True, exist_ok=True)
    if opts.tune:
        tune(opts.out, shapes, opts.strategy, opts.tag, opts.budget)  # type: ignore[arg-type]
    if opts.compare:
        compare(opts.out, shapes, opts.rounds, opts.graph, opts.tag)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
