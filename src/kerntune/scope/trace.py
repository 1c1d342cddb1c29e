"""What a program ran, read from torch.profiler's Chrome trace (Kineto's JSON): device time by class of kernel,
in a steady-state window, with how busy the device was, and the GEMM-like operators with shapes, dtypes,
layouts, bias, calls and device time.

Only device activity is device time: kernels, memcpy and memset (``cat`` kernel, gpu_memcpy, gpu_memset). The
ranges the profiler draws on the device timeline for host annotations (``gpu_user_annotation``: what
``torch.compile``'s ``## Call CompiledFxGraph ##`` becomes) and every host event are not. A device event is in
the window when the host launched it there: its runtime call (``cudaLaunchKernel``, ``cuLaunchKernelEx``,
``cudaGraphLaunch``, ``cudaMemcpyAsync``, matched by ``correlation``) starts in the window, so a weight upload
before the window never counts and a kernel that runs late still belongs to the step that launched it.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerntune.runtime.corpus import CorpusLine

DEVICE_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm")
"""The operators that compute a matmul (``aten::matmul`` and ``aten::linear`` call one of these: counting them
too would count each product twice)."""
CLASSES = (
    # Inductor's kernels first: their names spell the ops they fused, and a pointwise kernel around attention
    # (``triton_poi_fused__scaled_dot_product_cudnn_attention_...``) is Inductor's Triton, not the attention kernel.
    ("Triton (Inductor)", re.compile(r"^triton_(poi|red|per|tem|mm|for|unk)_")),
    ("vendor BLAS", re.compile(r"^nvjet|cublas|cutlass|gemm|gemv|^sm\d+_xmma|^Cijk_|rocblas|hipblaslt", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|sdpa|cudnn", re.I)),
    ("NCCL", re.compile(r"nccl", re.I)),
    ("ATen native", re.compile(r"at::native|^void at::|elementwise_kernel|reduce_kernel|vectorized_|index_kernel")),
)
DRIVER_LAUNCHED = "Triton (user) or custom, driver-launched"
CUSTOM = "custom CUDA or HIP"
DTYPES = {
    "c10::BFloat16": "bfloat16",
    "c10::Half": "float16",
    "float": "float32",
    "double": "float64",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e5m2": "float8_e5m2",
    "int": "int32",
    "long int": "int64",
    "signed char": "int8",
    "unsigned char": "uint8",
    "bool": "bool",
}
HOST_BOUND_BELOW = 0.8
"""A window whose device is busy less than this fraction of it is host-bound."""


def kernel_class(name: str, launch: str = "") -> str:
    """The class of a device kernel from its name and the runtime call that launched it."""
    for label, pattern in CLASSES:
        if pattern.search(name):
            return label
    return DRIVER_LAUNCHED if launch.startswith("cuLaunch") or launch.startswith("hipModuleLaunch") else CUSTOM


@dataclass(frozen=True)
class Window:
    """The part of a run that counts: from ``skip_s`` after the trace starts, for ``duration_s`` (None: to the
    end), or the ranges the program marked (``torch.profiler.record_function(region)``: every range so named)."""

    skip_s: float = 0.0
    duration_s: float | None = None
    region: str | None = None

    def describe(self) -> str:
        if self.region:
            return f"ranges named {self.region!r}"
        end = "the end" if self.duration_s is None else f"{self.skip_s + self.duration_s:g} s"
        return f"{self.skip_s:g} s to {end} of the trace"


WHOLE_RUN = Window()


def load_trace(path: Path) -> list[dict[str, Any]]:
    """The trace's events (``.json`` or ``.json.gz``)."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    data = json.loads(raw)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ValueError(f"{path} is not a Chrome trace (no traceEvents list)")
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]


def _intervals(window: Window, events: Sequence[dict[str, Any]]) -> list[tuple[float, float]]:
    if window.region:
        return sorted(
            (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
            for e in events
            if e.get("name") == window.region and e.get("cat") in ("user_annotation", "cpu_op")
        )
    start = min((float(e["ts"]) for e in events), default=0.0) + window.skip_s * 1e6
    end = start + window.duration_s * 1e6 if window.duration_s is not None else float("inf")
    return [(start, end)]


def _span_of(ts: float, spans: Sequence[tuple[float, float]]) -> int | None:
    """The index of the span ``ts`` falls in (spans sorted by start), or None."""
    i = bisect.bisect_right(spans, (ts, float("inf"))) - 1
    return i if i >= 0 and spans[i][0] <= ts <= spans[i][1] else None


def _inside(ts: float, spans: Sequence[tuple[float, float]]) -> bool:
    return _span_of(ts, spans) is not None


def _union_us(spans: Iterable[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for low, high in sorted(spans):
        if high > reach:
            total += high - max(low, reach)
            reach = high
    return total


def layout_letter(dims: Sequence[int], strides: Sequence[int]) -> str | None:
    """``N`` for a row-major matrix (the last two dims), ``T`` for the transpose view of one, None otherwise."""
    if len(dims) < 2 or len(strides) != len(dims):
        return None
    (rows, cols), (row_stride, col_stride) = dims[-2:], strides[-2:]
    if col_stride == 1 and (row_stride >= cols or rows == 1):
        return "N"
    if row_stride == 1 and (col_stride >= rows or cols == 1):
        return "T"
    return None


def gemm_line(op: Mapping[str, Any]) -> CorpusLine | None:
    """A GEMM-like operator event as a corpus line (no calls or time yet); None when its inputs do not read as one."""
    name, args = str(op.get("name")), op.get("args") or {}
    dims = [list(d) if isinstance(d, list) else [] for d in args.get("Input Dims") or []]
    strides = [list(s) if isinstance(s, list) else [] for s in args.get("Input Strides") or []]
    types = list(args.get("Input type") or [])
    concrete = list(args.get("Concrete Inputs") or [])
    first = {"aten::addmm": 1, "aten::baddbmm": 1}.get(name, 0)
    try:
        a, b = dims[first], dims[first + 1]
        if name in ("aten::bmm", "aten::baddbmm"):
            shape: dict[str, Any] = {"B": a[0], "M": a[1], "N": b[2], "K": a[2]}
        else:
            (m, k), n = a, b[1]
            shape = {"M": m, "N": n, "K": k}
    except (IndexError, ValueError, TypeError):
        return None
    letters = [layout_letter(dims[i], strides[i]) if i < len(strides) else None for i in (first, first + 1)]
    beta = concrete[3] if first and len(concrete) > 3 else ""
    bias = int(bool(first) and beta not in ("0", "0.0"))
    return CorpusLine(
        op=name,
        shape=shape,
        dtype=DTYPES.get(str(types[first]) if len(types) > first else "", ""),
        layout="".join(letters) if None not in letters else None,  # type: ignore[arg-type]
        bias=bias,
    )


def _device_events(events: Sequence[dict[str, Any]], spans: Sequence[tuple[float, float]]) -> list[dict[str, Any]]:
    """The device activity (kernels, copies, memsets) whose launch — the runtime or driver call it shares a
    ``correlation`` with — starts inside one of ``spans``, each with its span's index, launch and External id."""
    launches = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and isinstance(e.get("args"), dict)
        and "correlation" in e["args"]
    }
    device: list[dict[str, Any]] = []
    for e in events:
        kind = DEVICE_CATEGORIES.get(str(e.get("cat")))
        if kind is None:
            continue
        launch = launches.get((e.get("args") or {}).get("correlation"))
        host_ts = float(launch["ts"]) if launch else float(e["ts"])
        span = _span_of(host_ts, spans)
        if span is not None:
            device.append(
                {
                    **e,
                    "kind": kind,
                    "span": span,
                    "launch": str(launch["name"]) if launch else "",
                    "ext": (launch or e).get("args", {}).get("External id"),
                }
            )
    return device


def device_us_per_range(events: Sequence[dict[str, Any]], region: str) -> list[float]:
    """Per range the program marked ``region`` (``record_function``), in the order the ranges started: the summed
    durations of the device work launched inside it — the profiler's per-dispatch device time, which no host gap
    between launches and no queueing ahead of the range can enter (what a timer made of events brackets)."""
    spans = _intervals(Window(region=region), events)
    found = [0.0] * len(spans)
    for e in _device_events(events, spans):
        found[e["span"]] += float(e.get("dur", 0))
    return found


def _launch_by_kernel(events: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Each kernel's launching call where it was launched on its own, anywhere in the trace. A CUDA graph's replay
    launches all its kernels by one ``cudaGraphLaunch``, which says nothing of what they are; the same kernel's
    warm-up or capture launch (``cuLaunchKernelEx`` for Triton's) does, so a replayed kernel is classed by it."""
    found: dict[str, str] = {}
    for e in _device_events(events, [(float("-inf"), float("inf"))]):
        if e["kind"] == "kernel" and e["launch"] and "GraphLaunch" not in e["launch"]:
            found.setdefault(str(e["name"]), e["launch"])
    return found


def analyze(events: Sequence[dict[str, Any]], window: Window = WHOLE_RUN, top: int = 20) -> dict[str, Any]:
    """Device time by class and by kernel in the window, the device-busy fraction and its verdict, the GEMM-like
    operators (corpus lines with calls and device time), the kernels each GEMM line's calls launched
    (``gemm_kernels``: line identity → kernel name → launches, by the operator's External id: which kernel ran
    which shape), and the window itself."""
    spans = _intervals(window, events)
    device = _device_events(events, spans)
    total = sum(float(e.get("dur", 0)) for e in device)
    kernels: dict[str, dict[str, Any]] = {}
    by_class: dict[str, float] = defaultdict(float)
    alone = _launch_by_kernel(events) if any("GraphLaunch" in e["launch"] for e in device) else {}
    for e in device:
        launch = alone.get(str(e["name"]), e["launch"]) if "GraphLaunch" in e["launch"] else e["launch"]
        label = e["kind"] if e["kind"] != "kernel" else kernel_class(str(e["name"]), launch)
        row = kernels.setdefault(
            str(e["name"]), {"name": str(e["name"]), "class": label, "launches": 0, "device_us": 0.0}
        )
        row["launches"] += 1
        row["device_us"] += float(e.get("dur", 0))
        by_class[label] += float(e.get("dur", 0))
    ranked = sorted(kernels.values(), key=lambda k: -k["device_us"])
    for k in ranked:
        k["share"] = k["device_us"] / total if total else None
    by_ext: dict[Any, float] = defaultdict(float)
    names_by_ext: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for e in device:
        by_ext[e["ext"]] += float(e.get("dur", 0))
        if e["kind"] == "kernel":
            names_by_ext[e["ext"]][str(e["name"])] += 1
    gemm_kernels: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    gemms: dict[str, CorpusLine] = {}
    for op in events:
        if op.get("cat") != "cpu_op" or op.get("name") not in MATMUL_OPS or not _inside(float(op["ts"]), spans):
            continue
        line = gemm_line(op)
        if line is None:
            continue
        ext = (op.get("args") or {}).get("External id")
        used = by_ext.get(ext, 0.0)
        for kernel, launched in names_by_ext.get(ext, {}).items():
            gemm_kernels[line.identity][kernel] += launched
        was = gemms.get(line.identity)
        calls = (was.calls if was else 0) + 1
        time_us = (was.device_us or 0.0 if was else 0.0) + used
        gemms[line.identity] = CorpusLine(**{**line.__dict__, "calls": calls, "device_us": time_us if device else None})
    wall = _wall_us(spans, device)
    busy = _union_us((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in device) / wall if wall else None
    return {
        "window": {"describe": window.describe(), "spans": len(spans), "wall_us": wall},
        "device_us": total,
        "classes": dict(sorted(by_class.items(), key=lambda kv: -kv[1])),
        "busy": busy,
        "verdict": verdict(busy, total),
        "kernels": ranked[:top],
        "gemms": sorted(gemms.values(), key=lambda g: -(g.device_us or 0.0)),
        "gemm_kernels": {identity: dict(names) for identity, names in gemm_kernels.items()},
    }


def _wall_us(spans: Sequence[tuple[float, float]], device: Sequence[dict[str, Any]]) -> float:
    """The window's length: the union of the host spans, each stretched to the end of the last device event it
    launched (device work runs behind the host that launched it; an unbounded span ends there). A union, not a
    sum: a host that queues steps faster than the device runs them leaves stretched spans overlapping, and
    summing them would count the same device time once per queued step."""
    last: dict[int, float] = {}
    for e in device:
        last[e["span"]] = max(last.get(e["span"], float("-inf")), float(e["ts"]) + float(e.get("dur", 0)))
    stretched = []
    for i, (low, high) in enumerate(spans):
        reach = last.get(i)
        end = (reach if reach is not None else low) if high == float("inf") else max(high, reach or high)
        stretched.append((low, max(low, end)))
    return _union_us(stretched)


def verdict(busy: float | None, device_us: float) -> str:
    """A plain sentence on what faster kernels can do for this window."""
    if not device_us or busy is None:
        return "no device work in the window: nothing a kernel could speed up"
    if busy < HOST_BOUND_BELOW:
        return (
            f"host-bound: the device is busy {busy:.0%} of the window, so faster kernels cannot shorten it by "
            f"more than {busy:.0%}; the host sets the pace (CUDA graphs or torch.compile cut host time). "
            "Measured under the profiler, whose own host cost lengthens a host-bound window: unprofiled, the "
            "device is busier"
        )
    return (
        f"device-bound: the device is busy {busy:.0%} of the window; kernel time is what a faster kernel takes off it"
    )


def inductor_sources(names: Iterable[str], folders: Sequence[Path]) -> dict[str, str]:
    """Inductor kernel name → the generated file that defines it (``def NAME(``), from Inductor's cache."""
    wanted = {n for n in names if n.startswith("triton_")}
    found: dict[str, str] = {}
    for folder in folders:
        if not wanted - set(found) or not folder.is_dir():
            continue
        for path in folder.rglob("*.py"):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            for name in wanted - set(found):
                if f"def {name}(" in text:
                    found[name] = str(path)
    return found
