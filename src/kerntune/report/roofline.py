"""``kerntune roofline TUNING_RUN``: a run's timed candidates on the device's calibrated roofline, as PNG or SVG.

Each shape's cost model gives one arithmetic intensity (FLOP per byte that must move), so a shape's
candidates stand on one vertical line, from the slowest config up to the winner; the ceilings are the
calibrated copy bandwidth (the slope), the FMA rate, and the matrix rate of the run's dtype when the cost says
its FLOPs are matrix products. Points are full-protocol medians (search and confirmation); race screening
medians are left out, being shorter measurements.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError
from kerntune.measure.speed_of_light import memory_ceiling
from kerntune.model.roofline import CeilingsRecord
from kerntune.report.summary import RunReport

FORMATS = (".png", ".svg")


def roofline_points(report: RunReport) -> list[dict[str, Any]]:
    """One point per timed candidate with a full measurement: shape, role, label, median, intensity, FLOP/s."""
    points = []
    for shape in report.shapes:
        cost = shape.cost
        if not cost or not cost.get("bytes"):
            continue
        intensity = float(cost["flops"]) / float(cost["bytes"])
        for c in shape.all_candidates:
            m = c.best_measurement
            if c.status != "ok" or m is None or c.role == "screen":
                continue
            points.append(
                {
                    "shape": shape.shape.key,
                    "role": c.role,
                    "label": c.label or c.config.key,
                    "winner": shape.winner is not None and c.id == shape.winner.id,
                    "median_ms": m.median_ms,
                    "intensity": intensity,
                    "flops_per_s": float(cost["flops"]) / (m.median_ms * 1e-3),
                }
            )
    return points


def ceilings_of(report: RunReport) -> CeilingsRecord:
    ceilings = report.run.options.get("ceilings")
    if not ceilings:
        raise UsageError(
            f"tuning run {report.run.id} has no calibration recorded: run `kerntune calibrate` on this device, "
            "then tune again (a tuning run keeps the calibration it was measured against)"
        )
    return ceilings.copy()


def roofs_of(report: RunReport, ceilings: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
    """The memory bandwidth (bytes/s: the best of the probes) and the compute ceilings (FLOP/s) by name: FMA, and
    the matrix rate of each dtype the run's cost models say their FLOPs are matrix products of."""
    copy, fma = memory_ceiling(ceilings)[0], float(ceilings["fma_flops_per_s"])
    matrix_dtypes = {str(s.cost["matrix"]) for s in report.shapes if s.cost and s.cost.get("matrix")}
    matrix_rates = ceilings.get("matrix_flops_per_s") or {}
    return copy, {"FMA (fp32)": fma, **{f"{d} matrix": float(r) for d, r in matrix_rates.items() if d in matrix_dtypes}}


def draw_roofline(report: RunReport, path: Path) -> dict[str, Any]:
    """Write the chart to ``path`` (.png or .svg); return what was drawn (ceilings and points)."""
    if path.suffix.lower() not in FORMATS:
        raise UsageError(f"{path.name}: the roofline is written as PNG or SVG; name the file *.png or *.svg")
    ceilings = ceilings_of(report)
    points = roofline_points(report)
    if not points:
        raise UsageError(
            f"tuning run {report.run.id} has no timed candidate with a cost model: the spec needs "
            "cost=lambda shape, dtype: kt.Cost(flops=..., bytes=...)"
        )
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise UsageError("drawing needs matplotlib: pip install 'kerntune[plot]'") from exc

    copy, roofs = roofs_of(report, ceilings)
    probe = memory_ceiling(ceilings)[1]
    fma = roofs["FMA (fp32)"]
    xs = [p["intensity"] for p in points]
    top = max(roofs.values())
    low, high = min(min(xs) / 4, fma / copy / 8), max(max(xs) * 4, top / copy * 4)
    grid = [low * (high / low) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(10.5, 5.5), dpi=120)
    ax.plot(
        grid,
        [min(copy * x, fma) for x in grid],
        color="black",
        lw=1.5,
        label=f"{probe} {copy / 1e9:.4g} GB/s, FMA {fma / 1e12:.3g} TFLOP/s",
    )
    for name, rate in roofs.items():
        if name.startswith("FMA"):
            continue
        ax.plot(grid, [min(copy * x, rate) for x in grid], ls="--", lw=1.2, label=f"{name} {rate / 1e12:.3g} TFLOP/s")
    shapes = sorted({p["shape"] for p in points})
    colors = plt.get_cmap("tab10")
    for i, key in enumerate(shapes):
        mine = [p for p in points if p["shape"] == key]
        for role, marker, size in (("search", "o", 14), ("baseline", "s", 40)):
            chosen = [p for p in mine if p["role"] == role and not p["winner"]]
            if chosen:
                ax.scatter(
                    [p["intensity"] for p in chosen],
                    [p["flops_per_s"] for p in chosen],
                    s=size,
                    marker=marker,
                    color=colors(i % 10),
                    alpha=0.5 if role == "search" else 0.9,
                    edgecolors="none" if role == "search" else "black",
                    label=f"{key}: {role}" if role == "baseline" or len(shapes) > 1 else role,
                )
        for p in (p for p in mine if p["winner"]):
            ax.scatter(
                [p["intensity"]],
                [p["flops_per_s"]],
                s=160,
                marker="*",
                color=colors(i % 10),
                edgecolors="black",
                zorder=5,
                label=f"{key}: winner {p['median_ms']:.4g} ms",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(f"{report.run.problem} on {report.run.target.device_name} (run {report.run.id})", fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over the points
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return {"path": str(path), "ceilings": {"memory_bytes_per_s": copy, **roofs}, "points": points}
