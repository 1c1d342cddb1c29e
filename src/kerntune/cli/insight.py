"""``kerntune`` commands that explain results: calibrate, inspect, roofline, profile."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kerntune.cli.common import JsonFlag, RunRef, StoreOpt, _emit_json, _store, app, exit_on_row_errors, parse_shape
from kerntune.cli.panels import INSPECT, MEASURE
from kerntune.errors import UsageError
from kerntune.settings import Settings


@app.command(rich_help_panel=INSPECT)
def roofline(
    run: RunRef,
    output: Annotated[Path, typer.Option("-o", "--output", help="Chart file: *.png or *.svg.")] = Path("roofline.svg"),
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Draw a tuning run's timed candidates on the calibrated roofline (needs a calibration and the spec's cost)."""
    from kerntune.report.roofline import draw_roofline
    from kerntune.report.summary import build_report

    db = _store(store)
    drawn = draw_roofline(build_report(db, db.get_run(run)), output)
    if as_json:
        _emit_json(drawn)
    else:
        Console().print(f"{len(drawn['points'])} candidates on the roofline: {drawn['path']}")


@app.command(rich_help_panel=INSPECT)
def report(
    run: RunRef,
    output: Annotated[Path, typer.Option("-o", "--output", help="The HTML file to write.")] = Path("report.html"),
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Write one self-contained HTML page of a tuning run: winners, baselines, sample distributions, search trace,
    search-time vs confirmed medians, roofline, failures (no script or file fetched from anywhere)."""
    from kerntune.report.page import render
    from kerntune.report.summary import build_report
    from kerntune.runtime.table import write_atomically

    if output.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"{output.name}: the report is HTML; name the file *.html")
    db = _store(store)
    found = db.get_run(run)
    write_atomically(output, render(build_report(db, found), db.measured_at(found.id)))
    if as_json:
        _emit_json({"run": found.id, "path": str(output), "bytes": output.stat().st_size})
    else:
        Console().print(f"tuning run {found.id}: {output} ({output.stat().st_size:,} bytes)", highlight=False)


@app.command(rich_help_panel=INSPECT)
def profile(
    run: RunRef,
    top: Annotated[int, typer.Option("--top", help="Finalists per shape to profile.")] = 3,
    baselines: Annotated[bool, typer.Option("--baselines/--no-baselines", help="Profile the baselines too.")] = True,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Hardware counters of a tuning run's finalists (Nsight Compute with --clock-control none: SOL, achieved and
    theoretical occupancy, DRAM throughput), stored with the candidates. Exit 2 if any profile failed."""
    from kerntune.cli.render import profile_table
    from kerntune.inspect.profile import ProfileRequest
    from kerntune.inspect.profile import profile as run_profile

    if top < 1:
        raise UsageError("--top must be at least 1")
    rows = run_profile(ProfileRequest(run=run, top=top, baselines=baselines), _store(store))
    if as_json:
        _emit_json(rows)
    else:
        Console().print(profile_table(rows))
    exit_on_row_errors(rows, lambda r: f"profiling {r['label']} at {r['shape']} failed")


@app.command(rich_help_panel=MEASURE)
def calibrate(
    device: Annotated[
        str,
        typer.Option(
            "--device",
            help="cuda, cuda:N, rocm (the GPU), or an OpenCL device name "
            "fragment; default: the GPU if torch sees one, else OpenCL.",
        ),
    ] = "",
    force: Annotated[bool, typer.Option("--force", help="Measure again even if a calibration is cached.")] = False,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Measure the device's ceilings (copy and triad bandwidth, a read-only stream's on OpenCL devices, FMA rate,
    matrix rates per dtype on a GPU, launch latency); cached 7 days per device and driver."""
    from dataclasses import asdict

    from kerntune.measure.calibrate import calibrate as run_calibrate

    settings = Settings.from_env()
    found = run_calibrate(settings, _store(store), device=device or settings.device, force=force)
    if as_json:
        _emit_json(
            {
                **asdict(found),
                "memory_bytes_per_s": found.memory_bytes_per_s,
                "memory_probe": found.memory_probe,
                "ridge_flops_per_byte": found.ridge_flops_per_byte,
            }
        )
        return
    age = f"cached, measured {time.time() - found.created:.0f} s ago" if found.cached else "measured now"
    matrix = "".join(
        f"  matrix {dtype:14} {rate / 1e12:8.1f} TFLOP/s\n" for dtype, rate in found.matrix_flops_per_s.items()
    )
    Console().print(
        f"[bold]{found.device}[/] ({age})\n"
        f"  copy  {found.copy_bytes_per_s / 1e9:8.2f} GB/s\n"
        f"  triad {found.triad_bytes_per_s / 1e9:8.2f} GB/s\n"
        + (f"  read  {found.read_bytes_per_s / 1e9:8.2f} GB/s (a sum: reads only)\n" if found.read_bytes_per_s else "")
        + f"  bandwidth ceiling {found.memory_bytes_per_s / 1e9:.2f} GB/s (the best probe: "
        f"{found.memory_probe})\n"
        f"  FMA   {found.fma_flops_per_s / 1e9:8.2f} GFLOP/s (fp32)\n{matrix}"
        f"  launch latency {found.launch_latency_ms * 1e3:.1f} µs\n"
        f"  ridge point {found.ridge_flops_per_byte:.2f} FLOP/byte",
        highlight=False,
    )


@app.command(rich_help_panel=INSPECT)
def inspect(
    spec: Annotated[str, typer.Argument(help="A Triton spec file or a folder holding spec.py.")],
    target: Annotated[
        list[str],
        typer.Option(
            "--target",
            "--targets",
            help="sm_80, sm_86, sm_89, sm_90, sm_100, gfx906, gfx90a, "
            "gfx942, gfx950, gfx1100, gfx1201; repeat or comma-separate for a compile matrix.",
        ),
    ],
    config: Annotated[
        list[str] | None,
        typer.Option("--config", help="K=V,... over the spec's default config; give it twice to compare two."),
    ] = None,
    shape: Annotated[str | None, typer.Option("--shape", help="Shape fields over the spec's first shape.")] = None,
    dtype: Annotated[str | None, typer.Option("--dtype", help="One of the spec's dtypes.")] = None,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """What a config compiles to on each target, with no GPU needed: registers or VGPRs/AGPRs, shared memory
    or LDS, spills, occupancy and its limiter, and the instruction mix; with two configs, side by side with
    what differs. Exit 2 if a target does not build."""
    from kerntune.cli.render import diff_table, inspect_table
    from kerntune.inspect.diff import diff_rows
    from kerntune.inspect.resources import InspectRequest
    from kerntune.inspect.resources import inspect as run_inspect

    configs = [parse_shape(c) for c in config] if config else [{}]
    targets = [t.strip() for value in target for t in value.split(",") if t.strip()]
    request = InspectRequest(
        spec=spec, configs=configs, targets=targets, shape=parse_shape(shape) if shape else None, dtype=dtype
    )
    rows = run_inspect(request, Settings.from_env(), _store(store).home / "logs")
    diff = diff_rows(rows) if len(configs) == 2 else None
    if as_json:
        _emit_json(
            rows if diff is None else {"a": rows[0]["config"], "b": rows[-1]["config"], "rows": rows, "diff": diff}
        )
    elif diff is None:
        Console().print(inspect_table(rows))
    else:
        Console().print(diff_table(rows, diff))
    exit_on_row_errors(rows, lambda r: f"{r['kernel']} does not build for {r['target']}")
