"""An independent check of the winner/torch.matmul ratios a `kerntune tune kernels/triton_gemm --json` report
prints: each shape's winner and torch.matmul timed again here, call by call, by the profiler's kernel records.

Independent of kerntune's measurement code: nothing from ``kerntune.measure`` or ``kerntune.scope`` is used. The
spec is loaded only to launch the kernel under test (its ``launch`` at the winning config) and the library call
(its ``torch.matmul`` baseline), on the spec's own inputs. Per shape:
1. both are gated against the spec's float64 reference (relative Frobenius error ≤ 1e-2);
2. after a few warm-up calls, BLOCKS blocks of four calls in the order torch, winner, winner, torch, each call
   preceded by a 256 MiB fill of a scratch buffer (the L2 flushed; the fill is the only one-byte fill kernel in
   the run, so its records mark where each call starts), all under one torch.profiler session; block b runs on
   operand set b % PLACEMENTS (PLACEMENTS sets of the same inputs at different device addresses: the ratio of
   one kernel pair moves by a few percent with where its operands lie);
3. from the exported trace, each call's time is the sum of the durations of the GPU kernels between its flush and
   the next one; each block's ratio is (its two winner calls) / (its two torch calls); the estimate is the median
   of the block ratios with a bootstrap 95% interval (2,000 resamples, fixed seed);
4. the report's printed ratio for the winner (its finalist row's headline ratio over torch.matmul: kerntune's own
   profiler-timed ratio where it has one, else its CUDA events' interleaved ratio) is set beside it: agreement is
   |printed / checked - 1| ≤ 1%;
5. beside it, kerntune's own kernel medians for the two (its second timer, the winner's last confirmation round)
   and whether the winner's launch compiles here to the binary the report names (its ``binary_hash``): which side
   moved, and whether both timed the same code, when the ratios differ.

Usage: python benchmarks/measurement-trust/claims_check.py REPORT.json OUT.json [BLOCKS [PLACEMENTS]]   (prints one
line per shape and a summary; exit 1 when a gate failed or the profiler's records could not be tied to the calls)
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
GATE = 1e-2
FLUSH_BYTES = 256 << 20
AGREE = 0.01
PLACEMENTS = 16
"""Operand sets the blocks take in turn: on the H200 one kernel pair's ratio moved 2.7–4.9% between fresh
placements of its operands in one process (benchmarks/measurement-trust/placement_spread.py); a check on one placement
is one draw, and at 128×4096×4096 (a split-K winner, 1.3% standard deviation over placements) a mean of 4 has a standard
error of 0.65%."""
# The flush's own kernel: a fill of one-byte elements (torch's FillFunctor<unsigned char>). A memset record is
# not a flush: a library call may clear its own workspace, and that time is the call's.
FLUSH_KERNEL = re.compile(r"FillFunctor<unsigned char>")
# The clean flush's second kernel: a read of another buffer after the fill
# (benchmarks/measurement-trust/flush_read.py). The fill leaves the L2 full of dirty lines whose write-back would fall
# inside the next call's time; they are written back during this read, which leaves the L2 holding clean lines
# (benchmarks/measurement-trust/flush_dirty_lines.py measures what that moves).
FLUSH_READ_KERNEL = re.compile(r"flush_read_kernel")


def _problem() -> Any:
    from kerntune.tune.spec import load_spec  # the spec as kerntune loads it: only to launch its kernels

    return load_spec(ROOT / "kernels" / "triton_gemm").problem


def _relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(out.double() - ref.double()) / torch.linalg.vector_norm(ref.double()))


def call_times_us(events: list[dict[str, Any]], calls: int) -> list[float]:
    """Each call's GPU time in µs: the kernels (and memsets) after its flush and before the next, summed. A call's
    flush is a fill, a fill then a clean flush's read, or a read alone
    (benchmarks/measurement-trust/flush_dirty_lines.py); the flushes' own kernels are not the call's."""
    gpu = sorted(
        (e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset")),
        key=lambda e: float(e["ts"]),
    )

    def kind(e: dict[str, Any]) -> str:
        name = str(e["name"]) if e.get("cat") == "kernel" else ""
        return "fill" if FLUSH_KERNEL.search(name) else "read" if FLUSH_READ_KERNEL.search(name) else "call"

    kinds = [kind(e) for e in gpu]
    # a fill starts a call; a read starts one unless it follows the fill it belongs to
    starts = [i for i, k in enumerate(kinds) if k == "fill" or (k == "read" and (i == 0 or kinds[i - 1] != "fill"))]
    if len(starts) != calls:
        raise RuntimeError(f"found {len(starts)} flush records for {calls} calls: the trace cannot be split by call")
    bounds = [*starts, len(gpu)]
    times = [
        sum(
            float(e["dur"])
            for e, k in zip(gpu[bounds[i] : bounds[i + 1]], kinds[bounds[i] : bounds[i + 1]], strict=True)
            if k == "call"
        )
        for i in range(calls)
    ]
    if min(times) <= 0:
        raise RuntimeError("a call with no kernel of its own between two flushes")
    return times


def block_ratio(times: list[float]) -> dict[str, Any]:
    """Blocks of four (torch, winner, winner, torch): the median of (winner pair)/(torch pair), bootstrap CI."""
    blocks = np.array(times).reshape(-1, 4)
    ratios = (blocks[:, 1] + blocks[:, 2]) / (blocks[:, 0] + blocks[:, 3])
    rng = np.random.default_rng(0)
    medians = np.median(rng.choice(ratios, size=(2000, len(ratios)), replace=True), axis=1)
    return {
        "ratio": float(np.median(ratios)),
        "ci": [float(np.quantile(medians, 0.025)), float(np.quantile(medians, 0.975))],
        "blocks": len(ratios),
        "torch_us": float(np.median(blocks[:, [0, 3]])),
        "winner_us": float(np.median(blocks[:, [1, 2]])),
        "block_ratios": ratios.tolist(),
    }


def matmul_calls(problem: Any, args: dict[str, Any], shape: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """torch.matmul (the spec's library baseline) and the spec's kernel at ``config``, on ``args``."""
    library = next(b for b in problem.baselines if b.name == "torch.matmul").kernel
    return {
        "torch": lambda: library.fn(args, {**shape, **config}),
        "winner": lambda: problem.kernel.launch(problem.kernel.fn, args, config),
    }


def warm_up(calls: Any) -> None:
    """Three calls of each, then the device drained: compiles, caches and clocks settled before timing."""
    for _ in range(3):
        for call in calls:
            call()
    torch.cuda.synchronize()


def timed_blocks(
    first: Any,
    second: Any,
    flush: torch.Tensor,
    blocks: int,
    drained: bool = False,
    fill: int = 1,
    clean: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """``blocks`` blocks of (first, second, second, first), a fill of ``flush`` before every call, under one
    profiler session: ``block_ratio`` of the calls' kernel times (``winner_us`` is ``second``'s, ``torch_us``
    ``first``'s) and ``call_us``, each call's time in call order. ``first`` and ``second`` may be lists, one call
    per placement of the operands: block ``b`` takes placement ``b % P``. ``drained``: the host waits for the
    device after each fill and each call (the device idles between them); otherwise everything is enqueued back to
    back, as a program runs. ``fill``: the byte value the flush writes (kerntune's own flush writes zeros).
    ``clean``: a read of a buffer of at least the L2's size (``flush_read.CleanRead``), launched after each fill,
    so each call meets an L2 of clean lines rather than the fill's dirty ones."""
    firsts, seconds = (list(x) if isinstance(x, list) else [x] for x in (first, second))
    order = [
        call
        for b in range(blocks)
        for call in (
            firsts[b % len(firsts)],
            seconds[b % len(seconds)],
            seconds[b % len(seconds)],
            firsts[b % len(firsts)],
        )
    ]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for call in order:
            flush.fill_(fill)
            if clean is not None:
                clean()
            if drained:
                torch.cuda.synchronize()
            call()
            if drained:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    times = call_times_us(events, len(order))
    found = block_ratio(times)
    found["call_us"] = [round(t, 3) for t in times]  # raw, in call order: another estimator can be tried on them
    ratios = found.pop("block_ratios")
    if len(firsts) > 1:
        found["placement_ratios"] = placement_ratios(ratios, len(firsts))
    return found


def placement_ratios(block_ratios: list[float], placements: int) -> list[float]:
    """Each placement's median block ratio: block ``b`` ran on placement ``b % placements``."""
    ratios = np.array(block_ratios)
    return [float(np.median(ratios[p::placements])) for p in range(placements)]


def printed_ratio(found: dict[str, Any]) -> float | None:
    """The winner's time over torch.matmul's as the report prints it: its finalist row's headline ratio (kernel
    time where kerntune's profiler timed it, else the events' interleaved ratio)."""
    winner = found.get("winner") or {}
    for row in found.get("finalists", []):
        if row.get("id") != winner.get("id"):
            continue
        if row.get("ratio"):
            return float(row["ratio"]["value"])
        if row.get("interleaved_ratio"):  # a report from before the headline ratio
            return float(row["interleaved_ratio"]["ratio"])
    return None


def kerntune_medians_us(found: dict[str, Any]) -> dict[str, float] | None:
    """The winner's and torch.matmul's kernel medians in µs from kerntune's own second timer (the winner's last
    confirmation round, where it ran): set beside the check's, they say which side moved when the ratios differ."""
    second = (((found.get("winner") or {}).get("confirmed") or {}).get("conditions") or {}).get("telemetry", {}).get(
        "second_timer"
    ) or {}
    if "original_ms" not in second or "variant_ms" not in second:
        return None
    return {"torch_us": 1e3 * float(second["original_ms"]), "winner_us": 1e3 * float(second["variant_ms"])}


def binary_here(call: Any) -> str | None:
    """The hash of the binary the winner's launch compiles to in this process (kerntune's digest of its cubin,
    as the report's ``binary_hash``): a different hash means the two did not time the same code."""
    from kerntune.backends.triton import compile_only, kernel_resources  # reads the binary; times nothing

    with compile_only() as launched:
        call()
    return kernel_resources(launched[0][0])[1] if launched else None


def placed_operands(problem: Any, shape: dict[str, Any], count: int, pads: list[torch.Tensor]) -> list[dict[str, Any]]:
    """``count`` sets of the spec's inputs (the same data), each allocated behind a pad of a different size (kept
    in ``pads``) and all alive together: each lies elsewhere in device memory."""
    sets = []
    for p in range(count):
        pads.append(torch.empty((1 + 37 * p % 251) << 20, dtype=torch.uint8, device="cuda"))
        sets.append(problem.make_inputs(shape, "bfloat16", 1))
    return sets


def gate_errors(problem: Any, args: dict[str, Any], shape: dict[str, Any], calls: dict[str, Any]) -> dict[str, float]:
    """Each call's relative error against the spec's float64 reference, run once into an output filled with NaN
    (a call that writes nothing cannot pass)."""
    ref = problem.reference(args, shape)
    errors = {}
    for name, call in calls.items():
        args["c"].fill_(float("nan"))
        call()
        torch.cuda.synchronize()
        errors[name] = _relative_error(args["c"], ref)
    return errors


def check_shape(
    problem: Any, found: dict[str, Any], blocks: int, flush: torch.Tensor, placements: int = PLACEMENTS
) -> dict[str, Any]:
    shape = {k: found["shape"][k] for k in problem.shape_fields()}
    config = found["winner"]["config"]
    pads: list[torch.Tensor] = []
    sets = placed_operands(problem, shape, placements, pads)
    args = sets[0]
    calls = matmul_calls(problem, args, shape, config)
    errors = gate_errors(problem, args, shape, calls)
    placed = [matmul_calls(problem, each, shape, config) for each in sets]
    warm_up([c for each in placed for c in each.values()])
    checked = timed_blocks([c["torch"] for c in placed], [c["winner"] for c in placed], flush, blocks)
    printed = printed_ratio(found)
    binary, reported = binary_here(calls["winner"]), found["winner"].get("binary_hash")
    return {
        "shape": shape,
        "config": config,
        "errors": errors,
        "gated": all(e <= GATE for e in errors.values()),
        "checked": checked,
        "printed": printed,
        "kerntune_us": kerntune_medians_us(found),
        "binary": {
            "here": binary,
            "reported": reported,
            "same": None if not (binary and reported) else binary == reported,
        },
        "disagreement": None if printed is None else printed / checked["ratio"] - 1,
    }


def refused(script: str, message: str) -> int:
    """A bad argument or a missing device: one line on stderr, exit code 2 (no traceback)."""
    print(f"{script}: {message}", file=sys.stderr)
    return 2


def read_report(path: Path) -> dict[str, Any] | str:
    """A `kerntune tune --json` report, or why ``path`` is not one."""
    if not path.is_file():
        return f"no report at {path}: give a `kerntune tune --json` report"
    try:
        report = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        return f"{path} is not JSON ({exc}): give a `kerntune tune --json` report"
    if not isinstance(report, dict) or not isinstance(report.get("shapes"), list):
        return f"{path} has no 'shapes' list: give a `kerntune tune --json` report"
    return report


def main() -> int:
    if not 3 <= len(sys.argv) <= 5 or not all(a.isdigit() for a in sys.argv[3:]):
        return refused(
            "claims_check",
            "usage: python benchmarks/measurement-trust/claims_check.py REPORT.json OUT.json [BLOCKS [PLACEMENTS]] "
            "(whole numbers)",
        )
    report = read_report(Path(sys.argv[1]))
    if isinstance(report, str):
        return refused("claims_check", report)
    if not torch.cuda.is_available():
        return refused("claims_check", "no CUDA device: the check times kernels on a GPU")
    out = Path(sys.argv[2])
    blocks = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    placements = int(sys.argv[4]) if len(sys.argv) > 4 else PLACEMENTS
    problem = _problem()
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    rows: list[dict[str, Any]] = []
    ok = True
    for found in report["shapes"]:
        if not (found.get("winner") or {}).get("config"):
            continue
        try:
            row = check_shape(problem, found, blocks, flush, placements)
        except RuntimeError as exc:
            row, ok = {"shape": found["shape"], "error": str(exc)}, False
        rows.append(row)
        out.write_text(json.dumps({"rows": rows}, indent=1))
        if "error" in row:
            print(f"{row['shape']}: {row['error']}", flush=True)
            continue
        ok = ok and row["gated"]
        c, s = row["checked"], row["shape"]
        said = (
            "no printed ratio"
            if row["printed"] is None
            else (
                f"printed {row['printed']:.4f}, {'agrees' if abs(row['disagreement']) <= AGREE else 'DISAGREES'} "
                f"({100 * row['disagreement']:+.2f}%)"
            )
        )
        print(
            f"{s['M']}x{s['N']}x{s['K']} {s.get('layout', 'NN')}: checked {c['ratio']:.4f} "
            f"({c['ci'][0]:.4f}-{c['ci'][1]:.4f}, {c['blocks']} blocks; torch {c['torch_us']:.1f} us, winner "
            f"{c['winner_us']:.1f} us); {said}; gate {'ok' if row['gated'] else 'FAILED'}",
            flush=True,
        )
        if "placement_ratios" in c:
            print("    placements' ratios: " + ", ".join(f"{r:.4f}" for r in c["placement_ratios"]), flush=True)
        k, b = row["kerntune_us"], row["binary"]["same"]
        print(
            "    kerntune's CUPTI medians: "
            + ("none" if k is None else f"torch {k['torch_us']:.2f} us, winner {k['winner_us']:.2f} us")
            + "; winner binary "
            + {True: "the one kerntune timed", False: "DIFFERS from the one kerntune timed", None: "not compared"}[b],
            flush=True,
        )
    done = [r for r in rows if "checked" in r]
    both = [r for r in done if r["printed"] is not None]
    summary = {
        "shapes": len(done),
        "checked_geomean": math.exp(sum(math.log(r["checked"]["ratio"]) for r in done) / max(1, len(done))),
        "printed_geomean": math.exp(sum(math.log(r["printed"]) for r in both) / max(1, len(both))),
        "agree_within_1pct": sum(1 for r in both if abs(r["disagreement"]) <= AGREE),
        "max_abs_disagreement": max((abs(r["disagreement"]) for r in both), default=None),
    }
    out.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    print("summary:", json.dumps(summary))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
