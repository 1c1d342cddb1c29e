"""The payoff of a deployed GEMM table against every rival, side by side in one process on one GPU (bf16).

Per shape of the shapes file (benchmarks/specs/gemm_payoff_shapes.txt: groups suite, training, decode-odd-n):
  torch.mm      the library: ``torch.mm`` (``torch.addmm`` with a bias), what torch.matmul and nn.Linear call;
  table         the table's served call: the kernel ``kerntune run --table T --spec-dir kernels`` runs for the key.
                ``kerntune.runtime.serve`` loads the table and finds its specs (every rule of serving applies:
                entries marked library_faster or outranked by deploy are not served, an entry whose config breaks
                its spec's space is rejected, a table for another device or other versions applies nothing); the
                call is the served kernel serve() registers for the operator (its lookup, its launcher, its
                fallback), called directly: serve()'s override is removed at once, so the other candidates'
                torch.mm calls reach the library. Where the table leaves the key to the library or holds no entry
                for it, this is the library call itself, and the row says why (its ratio is then an A/A). The
                native gate, where ``kerntune run`` builds it, launches the same kernel from C++: the same device
                work, less host time;
  tunableop     PyTorch TunableOp tuned in this process for the shape: ``torch.cuda.tunable.enable`` (what
                PYTORCH_TUNABLEOP_ENABLED=1 sets) and tuning on for a few library calls, then tuning off; the timed
                call is the library call with TunableOp enabled. The solution it chose (``get_results()``) is kept:
                torch's own documentation says a CUDA build has only the 'Default' one (the cuBLAS call);
  max-autotune  ``torch.compile(mode="max-autotune-no-cudagraphs")`` of torch.mm (addmm), tuned from an empty
                Inductor cache (benchmarks/time-budget/against_max_autotune.py's ``max_autotune_mm``).
Each output is gated against the float64 product (relative Frobenius error <= 1e-2). Then the candidates are timed
call by call: ROUNDS rounds, each an order of the candidates and the next round its reverse (so every two rounds
are an A B B A block for every pair), through every permutation in turn; a 256 MB write flushes the L2 before every
call. Two timers: CUDA events around each call, the stream held while the host enqueues (kerntune's
``backends.stream_hold``: the device never waits on the host inside a sample); and the second timer, the
profiler's kernel durations (CUPTI through torch.profiler, ``kerntune.measure.second_timer.profiled_ms``), each
pass after untimed load. A speed is torch.mm's time over the candidate's (higher is faster): the median A B B A
block ratio with its bootstrap 95% interval (``kerntune.measure.stats.pair_ratio``), by each timer, and whether
the two agree within 1%.

The summary: per group and over all shapes, each candidate's geomean speed by each timer; and the acceptance,
each line met only where both timers say so over every shape of the file: the table's geomean speed at least 1.05;
no shape's table speed below 0.99; the table's geomean above TunableOp's on the same shapes.

Usage: python benchmarks/gemm-payoff/side_by_side.py --table T.json --out OUT.json [--shapes FILE]
           [--spec-dir kernels] [--group NAME] [--part I/N] [--rounds 96]
       python benchmarks/gemm-payoff/side_by_side.py --merge OUT.json PART.json [PART.json ...]
--group times one group of the file alone (its parts slice that group). A part (the I-th of N contiguous slices
of the shapes: the whole file outlasts one 600 s device call) writes its rows after every shape; --merge joins the
parts (a shape timed twice: the later part's row; a part of another table, shapes file or device than the part
that finished last is left out, and named) and prints the acceptance over them.
Exit 0 when every output passed its gate and every candidate ran, 1 otherwise (the JSON holds what ran), 2 with one
line on bad arguments (a missing file, a bad shape line, an unreadable table, no CUDA device).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT / "benchmarks" / "time-budget"), str(ROOT / "benchmarks" / "gemm")]

# against_max_autotune chooses a fresh Inductor cache folder before it imports torch: imported before torch.
import against_max_autotune as mat  # noqa: E402
import torch  # noqa: E402
from payoff_shapes import (  # noqa: E402
    DEFAULT_FILE,
    GROUPS,
    OneLineParser,
    PayoffShape,
    fail,
    of_group,
    parse_part,
    part_of,
    read_payoff_shapes,
)

from kerntune.measure.second_timer import SUSTAIN_S, agrees, profiled_ms  # noqa: E402
from kerntune.measure.stats import pair_ratio  # noqa: E402

LIBRARY = "torch.mm"
RIVALS = ("table", "tunableop", "max-autotune")
TIMERS = ("events", "cupti")
TIMER_NAMES = {"events": "CUDA events", "cupti": "CUPTI"}
FLUSH_BYTES = 256 * 2**20
TUNING_CALLS = 3
"""Library calls TunableOp sees with tuning on: the first tunes the call's signature, the others read it back."""
MAX_SUSTAIN_ROUNDS = 64
GEOMEAN_TARGET = 1.05
FLOOR = 0.99


class BadArguments(ValueError):
    """What the command line got wrong: one line, exit 2."""


# ------------------------------------------------------------------------------------------------ the served table
@dataclass
class ServedTable:
    """A table as ``kerntune run`` serves it (``serving``: serve()'s result, its override already removed) and its
    entries as written, for saying why a key is left to the library."""

    path: Path
    serving: Any
    entries: list[dict[str, Any]]
    device: dict[str, Any]
    backend: str = "CUDA"


def open_table(
    path: Path, spec_dirs: Sequence[Path], backend: str = "CUDA", device: Mapping[str, Any] | None = None
) -> ServedTable:
    """serve() the table as ``kerntune run --table PATH --spec-dir DIR`` does, then remove its override at once:
    only the table's own candidate calls the served kernel. The native gate and the first-call check are off
    (the Python served kernel is the one called here)."""
    from kerntune.runtime.keys import torch_device_fields
    from kerntune.runtime.serving import cpu_device_fields, serve
    from kerntune.settings import Settings

    fields: dict[str, Any] = (
        dict(device)
        if device is not None
        else dict(torch_device_fields() if backend == "CUDA" else cpu_device_fields())
    )
    settings = replace(Settings.from_env(), native_gate="off", first_call_check=0)
    serving = serve(path, spec_dirs=list(spec_dirs), backend=backend, device=fields, settings=settings)
    serving.close()
    try:
        entries = [e for e in json.loads(path.read_text()).get("entries", []) if isinstance(e, dict)]
    except (OSError, ValueError):
        entries = []
    return ServedTable(path, serving, entries, fields, backend)


@dataclass
class Served:
    """The table's call for one key: ``by`` the spec serving it (its name) or ``library``; ``why`` the library's."""

    call: Callable[[], object]
    by: str
    config: dict[str, Any] | None = None
    why: str = ""
    counts: Counter[str] = field(default_factory=Counter)


def served_call(
    table: ServedTable, op: str, args: tuple[Any, ...], dtype: str, library: Callable[[], object]
) -> Served:
    """The call ``kerntune run`` makes for ``op`` on ``args``: the served kernel serve() registers for the operator
    (the first spec whose exact entry holds the call launches it; a raise falls back to the library and is
    counted), or ``library`` where no spec's entry holds it."""
    # The served kernel as serve() builds it; private to the runtime, called here so that nothing but this
    # candidate is served (the library, TunableOp and max-autotune must reach the library's own kernel).
    from kerntune.runtime.serving import _served_kernel

    specs = [s for s in table.serving.specs if op in s.serve.ops]
    for s in specs:
        try:
            raw = s.serve.shape(op, args, {})
            config = None if raw is None else s.dispatcher.lookup(raw)
        except Exception as exc:  # a reader that raises serves nothing under kerntune run either
            return Served(library, "library", why=f"{s.problem.name} could not read the call ({exc})")
        if config is None:
            continue
        counts: Counter[str] = Counter(served=0, library=0, failed=0)
        original = torch.library.get_kernel(op, table.backend)
        kernel = _served_kernel(op, original, specs, counts)
        return Served(_bound(kernel, table.backend, args), s.problem.name, dict(config), counts=counts)
    return Served(library, "library", why=why_library(table, op, args, dtype))


def _bound(kernel: Callable[..., object], backend: str, args: tuple[Any, ...]) -> Callable[[], object]:
    """The served kernel called as torch's dispatcher calls it: a dispatch key set (read only where the library
    takes the call back), then the operator's arguments."""
    keyset = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, backend))

    def call() -> object:
        return kernel(keyset, *args)

    return call


def why_library(table: ServedTable, op: str, args: tuple[Any, ...], dtype: str) -> str:
    """Why the table leaves this call to the library, from its entries as written."""
    from kerntune.ops.gemm import read_call

    key = read_call(op, args, {})
    if key is None:
        return "the call is not one a served GEMM spec reads (dtype, strides or alignment)"
    _, m, n, k, layout, bias = key
    call = {"dtype": dtype, "M": m, "N": n, "K": k, "layout": layout, "bias": bias}
    mine = [e for e in table.entries if all(e.get("key", {}).get(f) == v for f, v in call.items())]
    if not mine:
        return "the table has no entry for this call"
    here = [e for e in mine if all(e["key"].get(f) == v for f, v in table.device.items())]
    if not here:
        return f"the table's entries for this call are for another device ({mine[0]['key'].get('device_name')})"
    if all(e.get("library_faster") for e in here):
        said = "; ".join(f"{e['key'].get('op')}: {json.dumps(e['library_faster'])[:160]}" for e in here)
        return f"deploy left it to the library (its winners were not faster beside it): {said}"
    unresolved = " ".join(table.serving.unresolved)
    names = sorted({str(e["key"].get("op")) for e in here if not e.get("library_faster")})
    if names and all(f"{name} (source" in unresolved for name in names):
        return f"no spec in --spec-dir is the one its entries name ({', '.join(names)}): kerntune run serves nothing"
    return (
        "kerntune run does not apply its entry (its config breaks its spec's space or constraints, or the table's "
        "validators are not this machine's versions): see serving.specs in the JSON"
    )


# ------------------------------------------------------------------------------------------------------ TunableOp
def tunableop_setup(folder: Path) -> dict[str, Any]:
    """TunableOp off until a candidate turns it on, reading and writing its results in a fresh file; its settings."""
    tunable = torch.cuda.tunable
    # PYTORCH_TUNABLEOP_ENABLED=1 in the environment would route the library's own calls through TunableOp.
    tunable.enable(False)
    # Results are read from this file at TunableOp's first use: an old tunableop_results.csv in the working folder
    # would answer every shape without tuning it.
    tunable.set_filename(str(folder / "tunableop_results.csv"))
    return {
        "max_tuning_duration_ms": tunable.get_max_tuning_duration(),
        "max_tuning_iterations": tunable.get_max_tuning_iterations(),
        "rotating_buffer_size": getattr(tunable, "get_rotating_buffer_size", lambda: None)(),
        "results_file": tunable.get_filename(),
        "environment": {k: v for k, v in os.environ.items() if k.startswith("PYTORCH_TUNABLEOP")},
    }


def _results() -> list[Any]:
    """TunableOp's results: (op, parameters, solution, ms) each (torch types the list as one tuple)."""
    found: Any = torch.cuda.tunable.get_results()
    return list(found)


def tunableop_call(library: Callable[[], object]) -> tuple[Callable[[], object], dict[str, Any]]:
    """TunableOp tuned for this call (enabled, tuning on for TUNING_CALLS library calls, tuning off), the timed
    call (the library call with TunableOp enabled), its tuning time and the results it added (op, parameters,
    solution, its time in ms)."""
    tunable = torch.cuda.tunable
    before = {tuple(r) for r in _results()}
    tunable.enable(True)
    tunable.tuning_enable(True)
    start = time.perf_counter()
    try:
        for _ in range(TUNING_CALLS):
            library()
        torch.cuda.synchronize()
    finally:
        tunable.tuning_enable(False)
        tunable.enable(False)
    tuning_s = time.perf_counter() - start
    added = [list(r) for r in _results() if tuple(r) not in before]

    def call() -> object:
        tunable.enable(True)
        try:
            return library()
        finally:
            tunable.enable(False)

    return call, {
        "tuning_s": tuning_s,
        "results": added,
        "solutions": sorted({str(r[2]) for r in added if len(r) > 2}),
        "validators": [list(v) for v in list(tunable.get_validators())],
    }


# --------------------------------------------------------------------------------------------------------- timing
def rotation(names: Sequence[str], rounds: int) -> list[tuple[str, ...]]:
    """``rounds`` orders of ``names``: a permutation, then its reverse, through every permutation in turn. Every
    two rounds carry each pair of candidates once in each order: an A B B A block for ``pair_ratio``."""
    firsts = [p for p in itertools.permutations(names) if p <= p[::-1]]
    orders: list[tuple[str, ...]] = []
    for i in range(rounds // 2):
        first = firsts[i % len(firsts)]
        orders += [first, first[::-1]]
    return orders


def events_ms(
    calls: Mapping[str, Callable[[], object]], orders: Sequence[Sequence[str]], warm: int, flush: Any, hold: Any
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Each call's CUDA-event time in ms, by name, over ``orders`` after ``warm`` untimed rounds of load; the stream
    held while the host enqueues (``hold``: a ``backends.stream_hold.StreamHold``)."""
    warmup = rotation(list(calls), 2 * math.ceil(warm / 2))
    launches = [name for order in [*warmup, *orders] for name in order]
    starts = [torch.cuda.Event(enable_timing=True) for _ in launches]  # type: ignore[no-untyped-call]
    ends = [torch.cuda.Event(enable_timing=True) for _ in launches]  # type: ignore[no-untyped-call]
    uncovered = hold.uncovered

    def enqueue(i: int) -> None:
        flush.zero_()  # before the start event, on the same stream: never inside a sample
        starts[i].record()
        calls[launches[i]]()
        ends[i].record()

    hold.timed(len(launches), enqueue)
    skip = sum(len(order) for order in warmup)
    per: dict[str, list[float]] = {name: [] for name in calls}
    for name, s, e in list(zip(launches, starts, ends, strict=True))[skip:]:
        per[name].append(float(s.elapsed_time(e)))
    return per, {"warm_rounds": len(warmup), "uncovered_chunks": hold.uncovered - uncovered}


def cupti_ms(
    calls: Mapping[str, Callable[[], object]],
    orders: Sequence[Sequence[str]],
    warm: int,
    flush: Any,
    after: Callable[[], None] | None = None,
) -> dict[str, list[float]]:
    """Each call's summed kernel durations in ms by the profiler (the second timer), by name, over ``orders``,
    after ``warm`` rounds of load in the same session (``profiled_ms``'s ``sustain``)."""
    warmup = rotation(list(calls), 2 * math.ceil(warm / 2))
    load = [calls[name] for order in warmup for name in order]
    names = [name for order in orders for name in order]
    timed = profiled_ms(
        [*load, *(calls[n] for n in names)], lambda _: flush.zero_(), torch.cuda.synchronize, len(load), after
    )
    per: dict[str, list[float]] = {name: [] for name in calls}
    for name, ms in zip(names, timed, strict=True):
        per[name].append(ms)
    return per


def speeds(per: Mapping[str, Sequence[float]]) -> dict[str, dict[str, Any]]:
    """Each rival's speed over the library (the library's time over its own, higher is faster) from samples taken
    side by side: the median A B B A block ratio and its 95% interval, with each side's median time."""
    found: dict[str, dict[str, Any]] = {}
    for name, samples in per.items():
        if name == LIBRARY or not samples:
            continue
        ratio = pair_ratio(list(zip(per[LIBRARY], samples, strict=True)))  # the rival's time over the library's
        found[name] = {
            "speed": 1 / ratio["ratio"],
            "ci": [1 / ratio["ci"][1], 1 / ratio["ci"][0]],
            "blocks": ratio["blocks"],
            "library_ms": ratio["original_ms"],
            "median_ms": ratio["variant_ms"],
        }
    return found


def sm_clock() -> Callable[[], float | None]:
    """A reader of the SM clock in MHz (NVML), or of None where there is none."""
    from kerntune.devices.telemetry import open_telemetry

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    telemetry = open_telemetry("nvidia", str(getattr(props, "uuid", "")) or None, torch.cuda.current_device())

    def read() -> float | None:
        return telemetry.read().get("sm_mhz") if telemetry.available else None

    return read


# ---------------------------------------------------------------------------------------------------------- a shape
def compare_shape(
    item: PayoffShape, index: int, table: ServedTable, rounds: int, flush: Any, hold: Any, clock: Callable[[], Any]
) -> dict[str, Any]:
    """One shape: the four candidates built, gated and timed by both timers (see the module docstring)."""
    from kerntune.ops import gemm as gemm_op

    shape = dict(item.shape)
    args = gemm_op.make_inputs(shape, "bfloat16", 1)
    a, b, bias = args["a"], args["b"], args["bias"]
    assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    ref = gemm_op.reference(args, shape)
    operands: tuple[torch.Tensor, ...]
    if isinstance(bias, torch.Tensor):
        op, operands = "aten::addmm", (bias, a, b)

        def library() -> object:
            return torch.addmm(bias, a, b)
    else:
        op, operands = "aten::mm", (a, b)

        def library() -> object:
            return torch.mm(a, b)

    row: dict[str, Any] = {"index": index, "group": item.group, "shape": shape, "key": item.text, "failed": {}}
    calls: dict[str, Callable[[], object]] = {LIBRARY: library}
    served = served_call(table, op, operands, "bfloat16", library)
    calls["table"] = served.call
    row["table"] = {"by": served.by, "config": served.config, "why": served.why}
    try:
        calls["tunableop"], row["tunableop"] = tunableop_call(library)
    except Exception as exc:  # a TunableOp that refuses the call: the others still run
        row["failed"]["tunableop"] = f"{type(exc).__name__}: {exc}"[:500]
    try:
        compiled, tuning_s, kernels, tuned = mat.max_autotune_mm(a, b, bias if isinstance(bias, torch.Tensor) else None)
        calls["max-autotune"] = compiled
        row["max_autotune"] = {"tuning_s": tuning_s, "kernels": kernels, "coordinate_descent": tuned}
    except Exception as exc:  # Inductor failed to compile or tune: the others still run
        row["failed"]["max-autotune"] = f"{type(exc).__name__}: {exc}"[:500]
    row["errors"] = {}
    for name in list(calls):
        try:
            out = calls[name]()
            torch.cuda.synchronize()
            assert isinstance(out, torch.Tensor)
            row["errors"][name] = mat.relative_error(out, ref)
        except Exception as exc:  # a candidate that cannot run is named, not timed
            row["failed"][name] = f"{type(exc).__name__}: {exc}"[:500]
            calls.pop(name)
    if served.by != "library":
        row["table"]["first_call"] = dict(served.counts)
        if served.counts["served"] != 1:  # the served kernel raised: the library ran the call, as kerntune run does
            row["table"]["why"] = "the served kernel failed at its first call; the library ran it (see first_call)"
    row["gated"] = {name: error <= mat.GATE for name, error in row["errors"].items()}
    del ref
    if LIBRARY not in calls:
        return row
    orders = rotation(list(calls), rounds)
    row["speed"] = {name: {} for name in calls if name != LIBRARY}
    row["median_ms"] = {}
    row["sm_mhz"] = {}
    events, row["events"] = events_ms(calls, orders, 2, flush, hold)
    row["sm_mhz"]["events"] = clock()
    per_round_ms = sum(sorted(v)[len(v) // 2] + 0.1 for v in events.values())  # + the flush before each: ~0.1 ms
    warm = min(MAX_SUSTAIN_ROUNDS, max(2, math.ceil(SUSTAIN_S * 1e3 / per_round_ms)))
    timed = {"events": events}
    try:
        read: dict[str, Any] = {}
        timed["cupti"] = cupti_ms(calls, orders, warm, flush, lambda: read.update(mhz=clock()))
        row["sm_mhz"]["cupti"] = read.get("mhz")
    except Exception as exc:  # CUPTI refused, a trace this torch writes differently: said, never a silent pass
        row["failed"]["cupti"] = f"{type(exc).__name__}: {exc}"[:500]
    for timer, per in timed.items():
        row["median_ms"][timer] = {name: sorted(v)[len(v) // 2] for name, v in per.items()}
        for name, found in speeds(per).items():
            row["speed"][name][timer] = found
    for by in row["speed"].values():
        if "events" in by and "cupti" in by:
            by["agree"] = agrees(by["events"]["speed"], by["cupti"]["speed"])
    row["rounds"], row["cupti_warm_rounds"] = rounds, warm
    return row


def shape_line(row: Mapping[str, Any]) -> str:
    """One line of a shape's results."""
    lib = row.get("median_ms", {}).get("events", {}).get(LIBRARY)
    parts = [f"{row['key']} [{row['group']}]: torch.mm {lib * 1e3:.1f} us" if lib else f"{row['key']} [{row['group']}]"]
    for name in RIVALS:
        by = row.get("speed", {}).get(name)
        if name in row["failed"] or not by:
            parts.append(f"{name} DID NOT RUN ({row['failed'].get(name, 'not timed')[:80]})")
            continue
        label = name
        if name == "table":
            label = f"table ({row['table']['by']})"
        elif name == "tunableop":
            label = f"TunableOp ({'/'.join(row['tunableop']['solutions']) or 'no result'})"
        figures = "/".join(f"{by[t]['speed']:.3f}" if t in by else "-" for t in TIMERS)
        verdict = "" if "agree" not in by else (" agree" if by["agree"] else " DISAGREE")
        parts.append(f"{label} {figures}{verdict}")
    bad = [n for n, ok in row.get("gated", {}).items() if not ok]
    parts.append("gates ok" if not bad else f"GATE FAILED: {', '.join(bad)}")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------------------- summary
def _speed(row: Mapping[str, Any], name: str, timer: str) -> float | None:
    found = row.get("speed", {}).get(name, {}).get(timer)
    return None if found is None else float(found["speed"])


def _geomean(values: Sequence[float]) -> float | None:
    return mat.geomean(list(values)) if values else None


def summarize(rows: Sequence[Mapping[str, Any]], total: int) -> dict[str, Any]:
    """Geomean speeds per timer, group and rival; the table's lowest speed; the timers' agreement; the acceptance."""
    summary: dict[str, Any] = {"shapes_total": total, "shapes_timed": len(rows), "geomean": {}, "lowest_table": {}}
    for timer in TIMERS:
        by_group: dict[str, Any] = {}
        for group in ("all", *GROUPS):
            chosen = [r for r in rows if group in ("all", r["group"])]
            by_group[group] = {}
            for name in RIVALS:
                values = [v for v in (_speed(r, name, timer) for r in chosen) if v is not None]
                by_group[group][name] = {"speed": _geomean(values), "shapes": len(values)}
        summary["geomean"][timer] = by_group
        table = [(v, r["key"]) for r in rows if (v := _speed(r, "table", timer)) is not None]
        summary["lowest_table"][timer] = min(table) if table else None
    pairs = [(r["key"], n) for r in rows for n, by in r.get("speed", {}).items() if "agree" in by]
    summary["timers_agree"] = {
        "checked": len(pairs),
        "agree": sum(1 for r in rows for by in r.get("speed", {}).values() if by.get("agree")),
        "disagree": [
            f"{r['key']} {n}" for r in rows for n, by in r.get("speed", {}).items() if by.get("agree") is False
        ],
    }
    summary["acceptance"] = acceptance(rows, total)
    return summary


def acceptance(rows: Sequence[Mapping[str, Any]], total: int) -> list[dict[str, Any]]:
    """The three acceptance lines, each met only where both timers say so over every shape of the file and the
    table's every output passed its gate."""
    why = []
    timed = [r for r in rows if all(_speed(r, "table", t) is not None for t in TIMERS)]
    if len(timed) < total:
        why.append(f"the table timed by both timers at {len(timed)} of {total} shapes")
    wrong = [r["key"] for r in rows if not r.get("gated", {}).get("table", False)]
    if wrong:
        why.append(f"the table's output failed its gate (or did not run) at {', '.join(wrong[:4])}")
    lines = []
    table = {t: _geomean([v for r in timed if (v := _speed(r, "table", t)) is not None]) for t in TIMERS}
    lines.append(
        _line(f"the table's geomean speed over torch.mm >= {GEOMEAN_TARGET}", table, len(timed), why, GEOMEAN_TARGET)
    )
    lowest = {t: min((v for r in timed if (v := _speed(r, "table", t)) is not None), default=None) for t in TIMERS}
    lines.append(_line(f"no shape's table speed below {FLOOR}", lowest, len(timed), why, FLOOR))
    both = [r for r in timed if all(_speed(r, "tunableop", t) is not None for t in TIMERS)]
    margin = {}
    for t in TIMERS:
        mine = _geomean([v for r in both if (v := _speed(r, "table", t)) is not None])
        theirs = _geomean([v for r in both if (v := _speed(r, "tunableop", t)) is not None])
        margin[t] = None if mine is None or theirs is None else mine / theirs
    extra = [] if both else ["TunableOp timed at no shape"]
    line = _line("the table's geomean above TunableOp's on the same shapes", margin, len(both), why + extra, 1.0, True)
    line["note"] = "figures: the table's geomean over TunableOp's"
    lines.append(line)
    return lines


def _line(
    claim: str, figures: Mapping[str, float | None], shapes: int, why: Sequence[str], bound: float, strict: bool = False
) -> dict[str, Any]:
    holds = {t: v is not None and (v > bound if strict else v >= bound) for t, v in figures.items()}
    reasons = list(why) + [f"not by {TIMER_NAMES[t]}" for t in TIMERS if not holds[t] and figures[t] is not None]
    return {
        "claim": claim,
        "met": not why and all(holds.values()),
        "figures": dict(figures),
        "shapes": shapes,
        "why": reasons,
    }


def said(line: Mapping[str, Any]) -> str:
    figures = ", ".join(
        f"{TIMER_NAMES[t]} {v:.4f}" if v is not None else f"{TIMER_NAMES[t]} -" for t, v in line["figures"].items()
    )
    why = f" ({'; '.join(line['why'])})" if line["why"] and not line["met"] else ""
    return f"{'met' if line['met'] else 'NOT MET'}: {line['claim']}: {figures} over {line['shapes']} shapes{why}"


def print_summary(summary: Mapping[str, Any]) -> None:
    for timer in TIMERS:
        for group, found in summary["geomean"][timer].items():
            print(
                f"geomean speed over torch.mm by {TIMER_NAMES[timer]}, {group}: "
                + ", ".join(
                    f"{name} {f['speed']:.4f} ({f['shapes']})" if f["speed"] else f"{name} -"
                    for name, f in found.items()
                )
            )
    agree = summary["timers_agree"]
    print(
        f"timers agree within 1% at {agree['agree']} of {agree['checked']} ratios"
        + (f"; disagree: {', '.join(agree['disagree'])}" if agree["disagree"] else "")
    )
    for line in summary["acceptance"]:
        print("ACCEPTANCE " + said(line))


# ------------------------------------------------------------------------------------------------------- the command
def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def merge_parts(paths: Sequence[Path]) -> dict[str, Any]:
    """The parts' rows as one run: the parts of the table, shapes file and device of the part that finished last
    (others are named in ``left_out``); a shape in two parts takes the later part's row; the summary over them."""
    parts = sorted(((p, json.loads(p.read_text())) for p in paths), key=lambda pp: str(pp[1].get("finished", "")))
    if not parts:
        raise BadArguments("--merge: no part")
    last = parts[-1][1]
    # Parts of another device (a device call answered with another card) or table are not one run's.
    kept = [all(d.get(f) == last.get(f) for f in ("shapes_sha256", "table_sha256", "device")) for _, d in parts]
    same = [pd for pd, keep in zip(parts, kept, strict=True) if keep]
    rows: dict[str, dict[str, Any]] = {}
    for _, part in same:
        for row in part.get("rows", []):
            rows[row["key"]] = row
    merged = sorted(rows.values(), key=lambda r: int(r["index"]))
    head = {k: v for k, v in last.items() if k not in ("rows", "summary", "part", "finished")}
    return {
        **head,
        "part": "merged",
        "parts": [str(p) for p, _ in same],
        "left_out": [
            f"{p} (another table, shapes file or device)" for (p, _), keep in zip(parts, kept, strict=True) if not keep
        ],
        "rows": merged,
        "summary": summarize(merged, int(last["shapes_total"])),
    }


def _fail(message: str) -> NoReturn:
    fail("side_by_side.py", message)


def _exit_code(rows: Sequence[Mapping[str, Any]]) -> int:
    failed = any(r["failed"] or not all(r.get("gated", {}).values()) for r in rows)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="side_by_side.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--shapes", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--spec-dir", type=Path, action="append", default=None)
    parser.add_argument("--part", default="1/1")
    parser.add_argument("--group", choices=GROUPS)
    parser.add_argument("--rounds", type=int, default=96)
    parser.add_argument("--merge", type=Path, nargs="+", metavar="OUT.json PART.json")
    opts = parser.parse_args(argv)
    if opts.merge:
        out, paths = opts.merge[0], opts.merge[1:]
        missing = [p for p in paths if not p.is_file()]
        if not paths or missing:
            _fail(f"--merge OUT.json PART.json ...: {missing[0] if missing else 'no part'}: no such file")
        try:
            doc = merge_parts(paths)
        except (OSError, ValueError, KeyError) as exc:
            _fail(f"--merge: {exc}")
        out.write_text(json.dumps(doc, indent=1))
        for left in doc["left_out"]:
            print(f"left out: {left}")
        print_summary(doc["summary"])
        return _exit_code(doc["rows"])
    if opts.table is None or opts.out is None:
        _fail("give --table T.json (a `kerntune deploy` table) and --out OUT.json, or --merge OUT.json PART.json ...")
    for name, path in (("--shapes", opts.shapes), ("--table", opts.table)):
        if not path.is_file():
            _fail(f"{name} {path}: no such file")
    if opts.rounds < 2 or opts.rounds % 2:
        _fail(f"--rounds {opts.rounds}: an even number, at least 2 (rounds pair into A B B A blocks)")
    spec_dirs = opts.spec_dir or [ROOT / "kernels"]
    try:
        every = read_payoff_shapes(opts.shapes)
        parse_part(opts.part)
        shapes = part_of(of_group(every, opts.group, opts.shapes), opts.part)
    except (OSError, ValueError) as exc:
        _fail(str(exc))
    from kerntune.runtime.table import load_table

    _, problem = load_table(opts.table)
    if problem is not None:
        _fail(problem)
    if not torch.cuda.is_available():
        _fail("no CUDA device: the side-by-side times the candidates on one GPU")
    return run(opts, every, shapes, spec_dirs)


def run(
    opts: argparse.Namespace, every: Sequence[PayoffShape], shapes: Sequence[PayoffShape], spec_dirs: Sequence[Path]
) -> int:
    import triton

    from kerntune.backends.stream_hold import StreamHold

    table = open_table(opts.table, spec_dirs)
    stats = table.serving.stats()
    doc: dict[str, Any] = {
        "shapes_file": str(opts.shapes),
        "shapes_sha256": _digest(opts.shapes),
        "shapes_total": len(every),
        "groups": dict(Counter(s.group for s in every)),
        "table": str(opts.table),
        "table_sha256": _digest(opts.table),
        "table_device": json.loads(opts.table.read_text()).get("device", {}),
        "device": table.device,
        "versions": {"torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton.__version__},
        "spec_dirs": [str(d) for d in spec_dirs],
        "serving": {
            "specs": {s.problem.name: s.path for s in table.serving.specs},
            "unresolved_specs": stats["unresolved_specs"],
            "left_to_library": len(stats["left_to_library"]),
            "outranked": len(stats["outranked"]),
        },
        "part": opts.part,
        "group": opts.group,
        "rounds": opts.rounds,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    # A table's keys hold the device it was tuned on: on another card (a device call answered with an H200 for an
    # H100), kerntune run serves none of its entries, and every "table" row would be the library's A/A.
    doc["table_for_this_device"] = all(doc["table_device"].get(f) == v for f, v in table.device.items())
    if not doc["table_for_this_device"]:
        print(f"WARNING: the table is for {doc['table_device']}, this device is {table.device}: nothing is served")
    doc["tunableop_settings"] = tunableop_setup(Path(tempfile.mkdtemp(prefix="tunableop-")))
    print(
        f"{torch.cuda.get_device_name()}: table {opts.table} served by "
        f"{', '.join(doc['serving']['specs']) or 'no spec'}"
        + (f"; unresolved: {', '.join(stats['unresolved_specs'])}" if stats["unresolved_specs"] else "")
        + f"; {len(shapes)} of {len(every)} shapes ({f'group {opts.group}, ' if opts.group else ''}part {opts.part}), "
        + f"{opts.rounds} rounds",
        flush=True,
    )
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    hold = StreamHold(torch.device("cuda", torch.cuda.current_device()))
    clock = sm_clock()
    rows: list[dict[str, Any]] = []
    index = {s.key: i for i, s in enumerate(every)}
    for item in shapes:
        row = compare_shape(item, index[item.key], table, opts.rounds, flush, hold, clock)
        rows.append(row)
        doc.update(rows=rows, finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        opts.out.write_text(json.dumps(doc, indent=1, default=str))  # a call cut by its time limit keeps these
        print(shape_line(row), flush=True)
    doc["serving"]["stats"] = table.serving.stats()
    doc["summary"] = summarize(rows, len(every))
    opts.out.write_text(json.dumps(doc, indent=1, default=str))
    print_summary(doc["summary"])
    return _exit_code(rows)


if __name__ == "__main__":
    sys.exit(main())
