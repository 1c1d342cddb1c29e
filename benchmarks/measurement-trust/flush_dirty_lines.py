"""Whether a cold-cache flush that writes costs the timed kernel its own write-backs: the decode GEMMs, and a
read of their weights, timed after three flushes.

A flush that writes (kerntune's ``zero_()`` of twice the L2, the claims check's and do_bench's ``fill_`` of 256
MiB) leaves the L2 full of dirty lines: the last L2-sized part of what it wrote. The timed kernel's first reads
evict them, so the L2 writes them back to HBM while that kernel runs, and the write-back traffic and the HBM's
read/write turnarounds fall inside its time. On the H200 (50 MiB of L2) that is up to ~12 µs at 4.3 TB/s, which
would fit the fixed ~9 µs the suite's decode shapes lose against a straight line of time over weight bytes
(benchmarks/gemm/history.md, "Decode GEMMs against the read ceiling"). A decode step's GEMM follows kernels that mostly
read (the previous layers' weights), so its L2 holds clean lines. The three flushes, before every launch:
- ``write``: a fill of a 2×L2 buffer (kerntune's flush today);
- ``write-read``: the same fill, then a read of another 2×L2 buffer (benchmarks/measurement-trust/flush_read.py): the
dirty lines
  are written back during that read, outside the timed kernel, and the L2 is left holding clean lines of neither
  operand;
- ``read``: the read alone (a dirty line the previous launch left is written back during it).
Sides per shape: torch.mm (the spec's library baseline), the winner of a tune report (``--report``) and a Triton
kernel that only reads the weight (benchmarks/gemm/decode_gemm.py's). Every (flush, side) pair in each round, the
flushes and the sides in rotating order, under one profiler session per shape; a launch's time is the CUPTI
durations of its kernels between two flushes (the claims check's reading of the trace: each flush's kernels are
named, torch's one-byte fill and ``flush_read_kernel``). Per pair: the median, the weight bandwidth it implies, and
the median over rounds of the ``write`` time minus the ``write-read`` time.

``--ncu``: an independent count of the mechanism, run under Nsight Compute (``--cache-control none``, the flush
being this script's): the read kernel of the first shape once to compile it, then three times after each flush, in
the order printed; the suite reads ``dram__bytes_write.sum`` per launch — a dirty L2 must show as writes from a
kernel that itself writes a few KB.

Usage: python benchmarks/measurement-trust/flush_dirty_lines.py OUT.json [--report REPORT.json] [--shapes FILE]
[--rounds N] [--ncu]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gemm"))  # decode_gemm, gemm_forms
from claims_check import GATE, _problem, call_times_us, gate_errors, matmul_calls, warm_up
from decode_gemm import read_kernel
from flush_read import CleanRead
from gemm_forms import key_of, read_shapes, report_winners

ROOT = Path(__file__).resolve().parents[2]
FLUSHES = ("write", "write-read", "read")
DECODE_ROWS = 32


class Flush:
    """The three flushes over two buffers of twice the device's L2 each."""

    def __init__(self) -> None:
        size = 2 * torch.cuda.get_device_properties(0).L2_cache_size
        self.written = torch.empty(size, dtype=torch.uint8, device="cuda")
        self.read = CleanRead(size)
        self.bytes = size

    def __call__(self, kind: str) -> None:
        if kind in ("write", "write-read"):
            self.written.fill_(0)
        if kind in ("write-read", "read"):
            self.read()


def weight_read(args: dict[str, Any]) -> Any:
    """A launch that reads every byte of B (the weight) once and writes one float per program."""
    weight, block, iters = args["b"], 4096, 8
    partial = torch.empty(triton.cdiv(weight.numel(), block * iters), dtype=torch.float32, device="cuda")
    grid = (partial.numel(),)
    return lambda: read_kernel[grid](weight, partial, weight.numel(), BLOCK=block, ITERS=iters, num_warps=8)


def time_shape(sides: dict[str, Any], flush: Flush, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Every (flush, side) once a round, both in rotating order, under one profiler session: each pair's CUPTI
    times, in round order."""
    names = list(sides)
    order: list[tuple[str, str]] = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for r in range(rounds):
            for kind in FLUSHES[r % 3 :] + FLUSHES[: r % 3]:
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    flush(kind)
                    sides[name]()
                    order.append((kind, name))
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    found: dict[str, dict[str, list[float]]] = {kind: {name: [] for name in names} for kind in FLUSHES}
    for (kind, name), us in zip(order, call_times_us(events, len(order)), strict=True):
        found[kind][name].append(round(us, 3))
    return found


def summarize(times: dict[str, dict[str, list[float]]], weight_bytes: int) -> dict[str, Any]:
    """Medians, the weight bandwidth they imply (TB/s), and per side the median over rounds of write − write-read
    and write − read (µs)."""
    out: dict[str, Any] = {
        "median_us": {},
        "weight_tb_s": {},
        "write_minus_write_read_us": {},
        "write_minus_read_us": {},
    }
    for kind, sides in times.items():
        out["median_us"][kind] = {name: statistics.median(v) for name, v in sides.items()}
        out["weight_tb_s"][kind] = {name: weight_bytes / statistics.median(v) / 1e6 for name, v in sides.items()}
    for name in times["write"]:
        for other, field in (("write-read", "write_minus_write_read_us"), ("read", "write_minus_read_us")):
            diffs = [a - b for a, b in zip(times["write"][name], times[other][name], strict=True)]
            out[field][name] = statistics.median(diffs)
    return out


def shape_sides(problem: Any, shape: dict[str, Any], winner: dict[str, Any] | None) -> tuple[dict[str, Any], Any]:
    """torch.mm, the report's winner (gated against float64 first; left out, with the reason, if it fails) and
    the weight read, on one operand set."""
    args = problem.make_inputs(shape, "bfloat16", 1)
    sides: dict[str, Any] = {}
    gate: Any = None
    if winner is not None:
        calls = matmul_calls(problem, args, shape, winner)
        gate = gate_errors(problem, args, shape, calls)
        sides = dict(calls) if max(gate.values()) <= GATE else {"torch": calls["torch"]}
    else:
        sides["torch"] = matmul_calls(problem, args, shape, {})["torch"]
    sides["read"] = weight_read(args)
    sides["_args"] = args  # kept alive with the closures; dropped before timing
    return sides, gate


def ncu_launches(problem: Any, shape: dict[str, Any], flush: Flush) -> None:
    """The read kernel three times after each flush, drained between launches, for Nsight Compute to count."""
    args = problem.make_inputs(shape, "bfloat16", 1)
    read = weight_read(args)
    read()
    torch.cuda.synchronize()
    print("ncu launch: warm-up (compiles the kernel)", flush=True)
    for kind in FLUSHES:
        for i in range(3):
            flush(kind)
            torch.cuda.synchronize()
            read()
            torch.cuda.synchronize()
            print(f"ncu launch: {kind} #{i + 1}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--report", type=Path, help="a `kerntune tune --json` report: its winners are a side")
    parser.add_argument(
        "--shapes",
        type=Path,
        default=ROOT / "benchmarks/specs/llm_gemm_shapes.txt",
        help=f"shapes file; those with M <= {DECODE_ROWS} are timed",
    )
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--ncu", action="store_true", help="only the launches Nsight Compute counts")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("flush_dirty_lines.py needs a CUDA GPU: none is visible", file=sys.stderr)
        return 2
    problem = _problem()
    shapes = [s for s in read_shapes(args.shapes) if s["M"] <= DECODE_ROWS]
    if not shapes:
        print(f"{args.shapes}: no shape with M <= {DECODE_ROWS}", file=sys.stderr)
        return 2
    flush = Flush()
    if args.ncu:
        ncu_launches(problem, shapes[0], flush)
        return 0
    winners = report_winners(args.report) if args.report else {}
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "flush_bytes": flush.bytes,
        "rounds": args.rounds,
        "report": str(args.report) if args.report else None,
        "shapes": [],
    }
    for shape in shapes:
        sides, gate = shape_sides(problem, shape, winners.get(key_of(shape)))
        sides.pop("_args")
        warm_up(list(sides.values()))
        times = time_shape(sides, flush, args.rounds)
        weight_bytes = shape["N"] * shape["K"] * 2
        row = {
            "shape": shape,
            "weight_bytes": weight_bytes,
            "winner": winners.get(key_of(shape)),
            "gate": gate,
            **summarize(times, weight_bytes),
            "times_us": times,
        }
        result["shapes"].append(row)
        args.out.write_text(json.dumps(result, indent=1))
        med, gap = row["median_us"], row["write_minus_write_read_us"]
        print(
            f"{shape['M']}x{shape['N']}x{shape['K']} ({weight_bytes / 1e6:.0f} MB): "
            + "; ".join(
                f"{name} "
                + " / ".join(f"{med[kind][name]:.1f}" for kind in FLUSHES)
                + f" us ({row['weight_tb_s']['write-read'][name]:.2f} TB/s clean), write - write-read {gap[name]:+.1f}"
                for name in med["write"]
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
