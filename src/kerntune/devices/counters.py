"""Hardware counters from the vendors' profilers: the command line for one profiled launch, and the parser of
what the profiler prints.

NVIDIA: Nsight Compute (``ncu``), always with ``--clock-control none`` (the card is measured as found; ncu
would otherwise lock the clocks to base), only the kernels inside the NVTX range ``kerntune-profile`` (the
harness's warm-up launches stay out), raw page as CSV. AMD: ``rocprofv3`` with counter collection as CSV —
written to the documented interface and **untested here** (no ROCm GPU was available).
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError

RANGE = "kerntune-profile"
NCU_METRICS = {
    "gpu__time_duration.sum": "duration",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "compute_sol_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_sol_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "dram__bytes.sum.per_second": "dram_bytes_per_s",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers",
}
ROCPROF_COUNTERS = ("SQ_WAVES", "SQ_BUSY_CYCLES", "GRBM_GUI_ACTIVE", "TCC_HIT_sum", "TCC_MISS_sum")
_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "usecond": 1e-6,
    "ms": 1e-3,
    "msecond": 1e-3,
    "s": 1.0,
    "second": 1.0,
    "nsecond": 1e-9,
    "byte/second": 1.0,
    "Kbyte/second": 1e3,
    "Mbyte/second": 1e6,
    "Gbyte/second": 1e9,
    "Tbyte/second": 1e12,
}


def profiler_for(vendor: str) -> str:
    """``ncu`` for NVIDIA, ``rocprofv3`` for AMD; a UsageError naming what to install when it is absent."""
    tool = {"nvidia": "ncu", "amd": "rocprofv3"}.get(vendor)
    if tool is None:
        raise UsageError(f"no hardware-counter profiler for vendor {vendor!r}: profiling needs an NVIDIA or AMD GPU")
    if shutil.which(tool) is None:
        hint = "Nsight Compute (ncu) from the CUDA toolkit" if tool == "ncu" else "ROCm's rocprofv3"
        raise UsageError(f"{tool} is not on PATH: install {hint}, or put it on PATH, and profile again")
    return tool


def ncu_command(harness: Sequence[str]) -> list[str]:
    return [
        "ncu",
        "--clock-control",
        "none",
        "--nvtx",
        "--nvtx-include",
        f"{RANGE}/",
        "--csv",
        "--page",
        "raw",
        "--metrics",
        ",".join(NCU_METRICS),
        *harness,
    ]


def rocprof_command(harness: Sequence[str], out_dir: Path) -> list[str]:
    """Untested here (no ROCm GPU): counter collection of every dispatch of the harness, its warm-up launches
    included (no range filter is applied on this path)."""
    return [
        "rocprofv3",
        "--pmc",
        *ROCPROF_COUNTERS,
        "--kernel-trace",
        "--output-format",
        "csv",
        "-d",
        str(out_dir),
        "--",
        *harness,
    ]


def _number(text: str) -> float | str:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def parse_ncu_raw(text: str) -> list[dict[str, Any]]:
    """Rows of ``ncu --csv --page raw``: a header of metric names, a row of units, then one row per kernel.
    Each kernel becomes {"kernel", "metrics": {short name: value in base units}}; durations in seconds."""
    start = text.find('"ID"')
    if start < 0:
        raise UsageError(
            "ncu printed no result table: was any kernel launched inside the profiled range? "
            f"Its output began: {text[:400]!r}"
        )
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, units, values = rows[0], rows[1], [r for r in rows[2:] if len(r) == len(rows[0])]
    kernels = []
    for row in values:
        record = dict(zip(header, row, strict=True))
        unit_of = dict(zip(header, units, strict=True))
        metrics: dict[str, Any] = {}
        for metric, short in NCU_METRICS.items():
            if metric not in record:
                continue
            value = _number(record[metric])
            scale = _UNITS.get(unit_of.get(metric, ""), 1.0)
            metrics["duration_s" if short == "duration" else short] = (
                value * scale if isinstance(value, float) else value
            )
        kernels.append({"kernel": record.get("Kernel Name", ""), "metrics": metrics})
    return kernels


def parse_rocprof_counters(out_dir: Path) -> list[dict[str, Any]]:
    """Untested here: ``*counter_collection.csv`` rows (Kernel_Name, Counter_Name, Counter_Value) summed per
    kernel dispatch."""
    files = sorted(out_dir.rglob("*counter_collection.csv"))
    if not files:
        raise UsageError(f"rocprofv3 wrote no counter_collection.csv under {out_dir}")
    kernels: dict[tuple[str, str], dict[str, Any]] = {}
    with files[-1].open(newline="") as handle:
        for row in csv.DictReader(handle):
            key = (row.get("Dispatch_Id", ""), row.get("Kernel_Name", ""))
            entry = kernels.setdefault(key, {"kernel": key[1], "metrics": {}})
            name, value = row.get("Counter_Name", ""), _number(row.get("Counter_Value", ""))
            if isinstance(value, float):
                entry["metrics"][name] = entry["metrics"].get(name, 0.0) + value
    return list(kernels.values())
