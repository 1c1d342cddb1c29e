"""torch.compile max-autotune, the Triton tutorial's autotune and kerntune's tuned winners side by side on the same
GEMM shapes (bf16, one GPU).

Given the report of a `kerntune tune kernels/triton_gemm --json` run (the time-budget suite's), per shape:
1. max-autotune tunes ``torch.mm`` at the shape and layout, from an empty Inductor cache (nothing an earlier run
   left is reused; persistent TMA templates on), its tuning wall time (the first call: trace, compile, autotune)
   recorded, with the kernels its choice launches and, where Inductor tuned a generated kernel by coordinate descent
   (a one-row product's reduction), the config it settled on; the Triton matmul tutorial's ``triton.autotune`` over
   its 16 configs (benchmarks/gemm/search_vs_anchors.py's kernel, a fresh autotuner per shape, B read through its
   strides so both layouts run; not where the shape has a bias, which the tutorial's kernel does not add) likewise;
2. kerntune's winner (the spec's ``launch`` at the winning config), max-autotune's compiled call, the tutorial's
   choice and ``torch.mm`` are gated against a float64 reference;
3. they are timed call by call, the order rotating through every permutation, the L2 flushed (256 MB
   written) before every matmul, by the profiler's kernel durations (CUPTI through torch.profiler: the kernels
   each matmul launched, their own durations summed); ratios are paired medians with 95% intervals.
"kerntune's table" is what `kerntune deploy` serves: the winner where it beats torch.mm, else the library.

Usage: python benchmarks/time-budget/against_max_autotune.py REPORT.json OUT.json [ROUNDS]   (prints a table; exit 1 if
a gate failed)
       python benchmarks/time-budget/against_max_autotune.py --matched-budget SIDE_BY_SIDE.json   (prints the
       ``--budget`` that
gives kerntune max-autotune's own tuning time a shape, from an earlier run's OUT.json: ``matched_budget``)
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-fresh-"))

import torch  # imported after the cache directory is chosen

from kerntune.measure.second_timer import profiled_ms
from kerntune.measure.stats import pair_ratio

ROOT = Path(__file__).resolve().parents[2]
GATE = 1e-2  # relative Frobenius error of a bf16 GEMM against float64 (kerntune's bf16 gate is of this order)


def _problem() -> Any:
    """The example's spec as kerntune loads it (its kernel, launch, inputs and reference)."""
    from kerntune.tune.spec import load_spec

    return load_spec(ROOT / "kernels" / "triton_gemm").problem


COORDINATE_DESCENT_LOG = "torch._inductor.runtime.coordinate_descent_tuner"


@contextlib.contextmanager
def coordinate_descent_record() -> Iterator[list[str]]:
    """Inductor's coordinate-descent results while the block runs, one line per tuned kernel: its starting config
    and time and the config it settled on ("<kernel>: Improve from <config> <ms> -> <config> <ms>, <x>"), which
    the profiler's kernel names do not say (max-autotune tunes a one-row product's reduction this way). Read from
    the tuner's own debug log; empty where it did not run or words its result otherwise."""
    found: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if "Improve from" in text:
                found.append(text)

    logger, handler = logging.getLogger(COORDINATE_DESCENT_LOG), Keep(logging.DEBUG)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # its debug lines are kept here, not printed among the results
    try:
        yield found
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def max_autotune_mm(
    a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None
) -> tuple[Callable[[], torch.Tensor], float, list[str], list[str]]:
    """A freshly compiled max-autotune ``torch.mm`` (``torch.addmm`` with a ``bias``) for these operands, as a call
    of no arguments; its tuning seconds, its kernels' names and its coordinate-descent results
    (``coordinate_descent_record``). Also benchmarks/gemm-payoff/side_by_side.py's max-autotune."""
    import torch._dynamo
    import torch._inductor.config as inductor

    torch._dynamo.reset()  # a new shape is compiled and tuned on its own, not served from an earlier graph
    inductor.fx_graph_cache = False
    if hasattr(inductor, "autotune_local_cache"):
        inductor.autotune_local_cache = False
    if hasattr(inductor.triton, "enable_persistent_tma_matmul"):
        inductor.triton.enable_persistent_tma_matmul = True

    def mm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, y)

    def addmm(z: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.addmm(z, x, y)

    compiled = torch.compile(mm if bias is None else addmm, mode="max-autotune-no-cudagraphs", dynamic=False)
    operands = (a, b) if bias is None else (bias, a, b)

    def call() -> torch.Tensor:
        return compiled(*operands)

    start = time.perf_counter()
    with coordinate_descent_record() as tuned:
        call()
        torch.cuda.synchronize()
    tuning_s = time.perf_counter() - start
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if str(e.device_type).endswith("CUDA")})
    return call, tuning_s, names, tuned


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """The relative Frobenius error of ``out`` against the float64 reference ``ref``."""
    return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))


def _tutorial(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[Any, float, str]:
    """The tutorial's autotune at this shape (a fresh autotuner: its 16 configs timed here), its wall time, its
    choice, and a call launching that choice directly."""
    import triton
    from search_vs_anchors import tutorial_kernel

    m, k = a.shape
    n = b.shape[1]
    autotuned = tutorial_kernel()

    def strides() -> tuple[int, ...]:
        return (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

    start = time.perf_counter()
    autotuned[lambda meta: (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)](
        a, b, c, m, n, k, *strides()
    )
    torch.cuda.synchronize()
    tuning_s = time.perf_counter() - start
    best, direct = autotuned.best_config, autotuned.fn
    kw = dict(best.kwargs)
    grid = (triton.cdiv(m, kw["BLOCK_SIZE_M"]) * triton.cdiv(n, kw["BLOCK_SIZE_N"]),)

    def call() -> Any:
        return direct[grid](a, b, c, m, n, k, *strides(), **kw, num_warps=best.num_warps, num_stages=best.num_stages)

    return call, tuning_s, str(best)


def compare_shape(
    problem: Any, shape: dict[str, Any], config: dict[str, Any], rounds: int, flush: torch.Tensor
) -> dict[str, Any]:
    args = problem.make_inputs(shape, "bfloat16", 1)
    a, b, c = args["a"], args["b"], args["c"]
    ref = a.double() @ b.double()
    compiled, tuning_s, kernels, tuned = max_autotune_mm(a, b)
    calls = {
        "kerntune": lambda: problem.kernel.launch(problem.kernel.fn, args, config),
        "max-autotune": compiled,
        "torch.mm": lambda: torch.mm(a, b, out=c),
    }
    tutorial_s, tutorial_choice = None, None
    if not int(shape.get("bias", 0)):
        calls["triton.autotune"], tutorial_s, tutorial_choice = _tutorial(a, b, c)
    errors = {}
    for name, call in calls.items():
        c.fill_(float("nan"))
        out = call()
        torch.cuda.synchronize()
        errors[name] = relative_error(out if name == "max-autotune" else c, ref)
    orders = list(itertools.permutations(calls))  # 6 orders of three, 24 of four
    sequence = [orders[i % len(orders)] for i in range(rounds)]
    launches = [calls[name] for order in sequence for name in order]
    timed = profiled_ms(launches, lambda _: flush.zero_(), torch.cuda.synchronize)
    per: dict[str, list[float]] = {name: [] for name in calls}
    for i, order in enumerate(sequence):
        for j, name in enumerate(order):
            per[name].append(timed[i * len(calls) + j])

    def ratio(x: str, y: str) -> dict[str, Any]:  # time of x over time of y, paired by round
        found = pair_ratio(list(zip(per[y], per[x], strict=True)))
        return {"ratio": found["ratio"], "ci": found["ci"]}

    medians = {name: sorted(v)[len(v) // 2] for name, v in per.items()}
    row = {
        "shape": shape,
        "config": config,
        "max_autotune_tuning_s": tuning_s,
        "max_autotune_kernels": kernels,
        "max_autotune_coordinate_descent": tuned,
        "errors": errors,
        "gated": all(e <= GATE for e in errors.values()),
        "median_ms": medians,
        "kerntune_over_torch": ratio("kerntune", "torch.mm"),
        "max_autotune_over_torch": ratio("max-autotune", "torch.mm"),
        "kerntune_over_max_autotune": ratio("kerntune", "max-autotune"),
        "table_over_max_autotune": ratio("kerntune", "max-autotune")
        if medians["kerntune"] < medians["torch.mm"]
        else ratio("torch.mm", "max-autotune"),
        "rounds": rounds,
    }
    if "triton.autotune" in calls:
        row.update(
            tutorial_tuning_s=tutorial_s,
            tutorial_choice=tutorial_choice,
            tutorial_over_torch=ratio("triton.autotune", "torch.mm"),
            kerntune_over_tutorial=ratio("kerntune", "triton.autotune"),
        )
    return row


def matched_budget(side_by_side: dict[str, Any]) -> str:
    """``kerntune tune``'s ``--budget`` at max-autotune's own tuning time a shape in a side-by-side run: the mean of
    its per-shape times, rounded down to 0.1 s, per shape. Per shape, because both sides then leave start-up out:
    max-autotune's time is each shape's first compiled call (trace, compile, autotune) in a process already
    started, and a per-shape budget bounds kerntune's run from its first shape (imports, device context and
    workers reported apart), where a budget for the whole run (``195s``) counts them. The mean, because kerntune's
    per-shape budget is one figure (it moves time a fast shape leaves to later ones, within the run's bound)."""
    times = side_by_side["summary"]["max_autotune_tuning_s"]
    if not times or min(times) <= 0:
        raise ValueError("no positive max-autotune tuning times in the side-by-side summary")
    return f"{math.floor(10 * sum(times) / len(times)) / 10:.1f}s/shape"


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--matched-budget":
        try:
            print(matched_budget(json.loads(Path(sys.argv[2]).read_text())))
        except (OSError, ValueError, KeyError) as exc:
            print(f"against_max_autotune.py --matched-budget {sys.argv[2]}: {exc}", file=sys.stderr)
            return 2
        return 0
    if len(sys.argv) not in (3, 4) or sys.argv[1].startswith("-") or not Path(sys.argv[1]).is_file():
        print(
            "usage: against_max_autotune.py REPORT.json OUT.json [ROUNDS] | --matched-budget SIDE_BY_SIDE.json "
            "(REPORT.json: an existing `kerntune tune --json` report)",
            file=sys.stderr,
        )
        return 2
    report, out = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    problem = _problem()
    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    rows = []
    for found in report["shapes"]:
        winner = found.get("winner")
        if not winner or not winner.get("config"):
            continue
        shape = {k: found["shape"][k] for k in ("M", "N", "K", "layout", "bias")}
        row = compare_shape(problem, shape, winner["config"], rounds, flush)
        rows.append(row)
        out.write_text(json.dumps({"rows": rows}, indent=1))
        print(
            f"{shape['M']}x{shape['N']}x{shape['K']} {shape['layout']}: max-autotune tuned in "
            f"{row['max_autotune_tuning_s']:.1f} s ({', '.join(k[:40] for k in row['max_autotune_kernels'])}); "
            f"speedup over torch.mm: kerntune {1 / row['kerntune_over_torch']['ratio']:.3f}, max-autotune "
            f"{1 / row['max_autotune_over_torch']['ratio']:.3f}; kerntune / max-autotune time "
            f"{row['kerntune_over_max_autotune']['ratio']:.3f}, table / max-autotune "
            f"{row['table_over_max_autotune']['ratio']:.3f}; "
            + "".join(f"max-autotune's {line}; " for line in row["max_autotune_coordinate_descent"])
            + (
                f"tutorial autotune {1 / row['tutorial_over_torch']['ratio']:.3f} over torch.mm (tuned in "
                f"{row['tutorial_tuning_s']:.1f} s); "
                if "tutorial_over_torch" in row
                else ""
            )
            + f"gate {'ok' if row['gated'] else 'FAILED'} "
            f"{row['errors']}",
            flush=True,
        )
    summary: dict[str, Any] = {
        key: geomean([r[key]["ratio"] for r in rows])
        for key in (
            "kerntune_over_torch",
            "max_autotune_over_torch",
            "kerntune_over_max_autotune",
            "table_over_max_autotune",
        )
    }
    summary["max_autotune_tuning_s"] = [round(r["max_autotune_tuning_s"], 2) for r in rows]
    tutorial = [r for r in rows if "tutorial_over_torch" in r]
    if tutorial:
        for key in ("tutorial_over_torch", "kerntune_over_tutorial"):
            summary[key] = geomean([r[key]["ratio"] for r in tutorial])
        summary["tutorial_tuning_s"] = [round(r["tutorial_tuning_s"], 2) for r in tutorial]
    summary["shapes_kerntune_table_at_least_as_fast"] = sum(
        1 for r in rows if r["table_over_max_autotune"]["ci"][0] <= 1.0
    )
    out.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    print("geomean time ratios (<1: the first is faster):", json.dumps(summary))
    return 0 if all(r["gated"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
