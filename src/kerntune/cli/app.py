"""``kerntune``: the command line. Thin: parse, call a stage's function, render.

Exit codes: 0 ok; 1 a claim failed (no candidate passed the gate); 2 usage or environment error (one line
on stderr, no traceback); 130 interrupted by Ctrl-C, 143 stopped by SIGTERM (``tune`` marks its tuning run
interrupted and prints the ``--resume`` command).
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kerntune.cli.common import (
    MAX_COUNT,
    MAX_SEED,
    JsonFlag,
    RunRef,
    StoreOpt,
    Terminated,
    _emit_json,
    _store,
    app,
    bounded,
    finite,
    parse_shape,
    sigterm_as_interrupt,
    store_failure,
)
from kerntune.cli.panels import INSPECT, MEASURE, LoopGroup, deprecated_alias
from kerntune.errors import KerntuneError, UsageError
from kerntune.model import Budget
from kerntune.settings import Settings

__all__ = ["app", "main", "parse_shape"]


@app.command(rich_help_panel=MEASURE)
def tune(
    spec: Annotated[str | None, typer.Argument(help="Spec file, or a folder holding spec.py.")] = None,
    shape: Annotated[
        list[str] | None,
        typer.Option("--shape", help="Shape fields NAME=VALUE[,NAME=VALUE]; repeat for several shapes."),
    ] = None,
    dtype: Annotated[str | None, typer.Option("--dtype", help="One of the spec's dtypes.")] = None,
    device: Annotated[
        str, typer.Option("--device", help="cuda, cuda:N, cpu, or an OpenCL device name (default $KERNTUNE_DEVICE).")
    ] = "",
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="auto (the default: race over spaces of more than 64 valid configs, "
            "else exhaustive), race (successive halving over TPE proposals), exhaustive, random, tpe "
            "or cmaes (Optuna), coordinate or lever.",
        ),
    ] = "auto",
    target_ms: Annotated[
        float | None,
        typer.Option(
            "--target-ms",
            parser=finite("--target-ms", low=0.0),
            help="Stop a shape's search once a config's median is this fast.",
        ),
    ] = None,
    budget: Annotated[
        list[str] | None,
        typer.Option(
            "--budget",
            help="Evaluations per shape (100), time for the whole tuning (90s, 5m), time per shape "
            "(45s/shape); comma-separated or repeated.",
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option("--seed", parser=bounded("--seed", 0, MAX_SEED), help="Seed for random search and gate inputs."),
    ] = 0,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="TUNING_RUN",
            help="Continue an interrupted tuning run (its id); one that another process is still tuning is refused.",
        ),
    ] = None,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Run configs the ledger says failed before (same source, device).")
    ] = False,
    shapes_from: Annotated[
        Path | None,
        typer.Option(
            "--shapes-from",
            help="A shape corpus (`kerntune scope --corpus FILE` or "
            "KERNTUNE_RECORD_UNTUNED=FILE): tune its distinct shapes of this spec.",
        ),
    ] = None,
    top: Annotated[
        int,
        typer.Option(
            "--top",
            parser=bounded("--top", 0, MAX_COUNT),
            help="With --shapes-from: only the N shapes with the most device time.",
        ),
    ] = 0,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            parser=bounded("--workers", 1, 4096),
            help="Time on N devices at once: one worker per visible GPU (pinned, "
            "each under its GPU's lock), or N Ray actors; shapes are shared out, each shape "
            "timed on one device.",
        ),
    ] = None,
    executor: Annotated[str, typer.Option("--executor", help="local (this host) or ray (a Ray cluster).")] = "local",
    address: Annotated[
        str, typer.Option("--address", help="The Ray cluster to join (ray://HOST:10001, auto); none: a local one.")
    ] = "",
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Tune a kernel: evaluate configs (compile, gate, measure) and report the gated winner."""
    from kerntune.cli.render import BarProgress, JsonLinesProgress, print_report
    from kerntune.report.summary import build_report, report_json
    from kerntune.tune.pool import Placement
    from kerntune.tune.request import TuneRequest
    from kerntune.tune.run import tune as run_tune

    if spec is None and resume is None:
        raise UsageError("give a SPEC (a spec file or a folder holding spec.py), or --resume TUNING_RUN")
    if resume is not None and (
        spec is not None or shape or dtype or budget or shapes_from or top or workers is not None
    ):
        raise UsageError("--resume continues a tuning run exactly as it was started: give only its id")
    settings = Settings.from_env()
    request = TuneRequest(
        spec=spec or "",
        shapes=[parse_shape(s) for s in shape or []],
        dtype=dtype,
        device=device or settings.device,
        strategy=strategy,
        budget=Budget.parse(budget or []),
        seed=seed,
        resume=resume,
        retry_failed=retry_failed,
        target_ms=target_ms,
        shapes_from=str(shapes_from or ""),
        shapes_top=top,
        placement=Placement(workers=workers, executor=executor, address=address),
    )
    db = _store(store)
    console = Console(stderr=as_json)
    try:
        with sigterm_as_interrupt():
            if as_json:
                with contextlib.redirect_stdout(sys.stderr):  # stdout holds the JSON only, whatever a library prints
                    run = run_tune(request, settings, db, JsonLinesProgress(sys.stderr))
            else:
                with BarProgress(console) as progress:
                    run = run_tune(request, settings, db, progress)
    except KeyboardInterrupt as exc:
        stopped = resume or next((r.id for r in db.runs(limit=1) if r.status == "interrupted"), None)
        hint = f": kerntune tune --resume {stopped}" if stopped else ""
        what = "stopped (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        sys.stderr.write(f"kerntune: {what}; finished candidates are saved{hint}\n")
        raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None
    report = build_report(db, run)
    if as_json:
        _emit_json(report_json(report))
    else:
        print_report(console, report)
    raise typer.Exit(0 if report.all_gated else 1)


@app.command(rich_help_panel=INSPECT)
def history(
    store: StoreOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", parser=bounded("--limit", 0, MAX_COUNT), help="Most recent tuning runs to list.")
    ] = 50,
    as_json: JsonFlag = False,
) -> None:
    """List the tuning runs in the store, newest first."""
    from kerntune.cli.render import runs_table
    from kerntune.report.summary import run_json

    found = _store(store).runs(limit)
    if as_json:
        _emit_json([run_json(r) for r in found])
    else:
        Console().print(runs_table(found))


deprecated_alias(app, "runs", "kerntune history", history)


@app.command(rich_help_panel=INSPECT)
def show(
    run: RunRef,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Show one tuning run: winner, baselines, speedups, gate results and failed candidates."""
    from kerntune.cli.render import print_report
    from kerntune.report.summary import build_report, report_json

    db = _store(store)
    report = build_report(db, db.get_run(run))
    if as_json:
        _emit_json(report_json(report))
    else:
        print_report(Console(), report)


@app.command(rich_help_panel=INSPECT)
def ledger(
    problem: Annotated[str | None, typer.Option("--problem", help="Only this problem.")] = None,
    kind: Annotated[
        str | None,
        typer.Option("--kind", help="Only this kind: a failure kind (compile, hang, ...), claim or pruned."),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", parser=bounded("--limit", 0, MAX_COUNT), help="Most recent rows to list.")
    ] = 200,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """List failed candidates and failed A/B claims with their reasons (searches skip deterministic failures
    unless --retry-failed)."""
    from kerntune.cli.render import ledger_table
    from kerntune.model import FailureKind
    from kerntune.store.ledger import CLAIM, PRUNED, ledger_rows

    kinds = [k.value for k in FailureKind] + [CLAIM, PRUNED]
    if kind is not None and kind not in kinds:
        raise UsageError(f"unknown kind {kind!r}: one of {', '.join(kinds)}")
    rows = ledger_rows(_store(store), problem=problem, kind=kind, limit=limit)
    if as_json:
        _emit_json(
            [
                {
                    "run": r.run_id,
                    "problem": r.problem,
                    "spec_hash": r.spec_hash,
                    "target": r.target.as_dict(),
                    "shape": r.shape_key,
                    "candidate": r.candidate,
                    "failure": r.failure,
                    "reason": r.reason,
                }
                for r in rows
            ]
        )
    else:
        Console().print(ledger_table(rows))


@app.command(rich_help_panel=MEASURE)
def ab(
    a: Annotated[
        str,
        typer.Argument(
            help="Side A: SPEC, SPEC@K=V,.. (a config), SPEC@NAME (a baseline), "
            "@K=V,.. or a kernel source (with --spec), git:REV:PATH, cmd:COMMAND; "
            "env:NAME=VALUE,..:SIDE sets variables in its processes."
        ),
    ],
    b: Annotated[str, typer.Argument(help="Side B, the same forms. B is the change: 'win' means B is faster.")],
    spec: Annotated[str | None, typer.Option("--spec", help="Spec for sides that are configs or sources.")] = None,
    shape: Annotated[str | None, typer.Option("--shape", help="Shape fields NAME=VALUE[,...].")] = None,
    dtype: Annotated[str | None, typer.Option("--dtype", help="One of the spec's dtypes.")] = None,
    device: Annotated[str, typer.Option("--device", help="Device selector (default $KERNTUNE_DEVICE).")] = "",
    processes: Annotated[
        int | None,
        typer.Option(
            "--processes",
            parser=bounded("--processes", 2, 1000),
            help="Values per side (default $KERNTUNE_AB_PROCESSES).",
        ),
    ] = None,
    scheme: Annotated[str, typer.Option("--scheme", help="auto, fresh (ABBA processes) or in-process.")] = "auto",
    metric: Annotated[
        str | None, typer.Option("--metric", help="Regex whose first group is a command's metric.")
    ] = None,
    higher_is_better: Annotated[
        bool, typer.Option("--higher-is-better", help="A command's metric is a throughput, not a time.")
    ] = False,
    expect: Annotated[
        str | None, typer.Option("--expect", help="win, loss or same: exit 0 when it holds, 1 when not.")
    ] = None,
    recalibrate: Annotated[
        bool, typer.Option("--recalibrate", help="Measure the A/A noise band again before the verdict.")
    ] = False,
    reference: Annotated[
        str,
        typer.Option(
            "--reference",
            help="Fresh processes of one spec time a fixed kernel beside each side: "
            "default (the spec's default config), @BASELINE (e.g. @torch.matmul: one an env: change "
            "to the spec's kernel leaves alone), @K=V,... (a config), or none (each side alone).",
        ),
    ] = "default",
    seed: Annotated[
        int, typer.Option("--seed", parser=bounded("--seed", 0, MAX_SEED), help="Seed of the gate's inputs.")
    ] = 0,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Is B faster than A (win), slower (loss), or within this box's noise band (measured by an A/A run)?

    Two configs of one kernel are timed interleaved in one worker; other changes in fresh processes, ABBA."""
    from kerntune.cli.render import LineProgress, ab_lines
    from kerntune.compare.ab import ABRequest, run_ab

    settings = Settings.from_env()
    request = ABRequest(
        a=a,
        b=b,
        spec=spec,
        shape=parse_shape(shape) if shape else {},
        dtype=dtype,
        device=device or settings.device,
        processes=processes,
        scheme=scheme,
        metric=metric,
        higher_is_better=higher_is_better,
        expect=expect,
        recalibrate=recalibrate,
        seed=seed,
        reference=reference,
    )
    console = Console(stderr=True)
    record = run_ab(request, settings, _store(store), None if as_json else LineProgress(console))
    if as_json:
        data = {k: v for k, v in record.__dict__.items() if k != "processes"}
        data["processes"] = [p.__dict__ for p in record.processes]
        _emit_json(data)
    else:
        for line in ab_lines(record):
            Console().print(line, highlight=False, overflow="fold")
    raise typer.Exit(1 if record.expect is not None and record.claim_failed else 0)


floor_app = typer.Typer(
    cls=LoopGroup,
    help="Per-arch speed floors: record a tuning run's winners, check a later tuning run against them.",
)
app.add_typer(floor_app, name="floor", rich_help_panel=MEASURE)
FloorFile = Annotated[Path, typer.Option("--file", help="Floor file (key = ms lines, comment header).")]


@floor_app.command("record")
def floor_record(
    run: RunRef,
    file: FloorFile,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Write the tuning run's winners (confirmed medians) as floors, merged over the file's other keys."""
    from kerntune.deploy.floors import write_floors
    from kerntune.report.summary import build_report

    db = _store(store)
    floors = write_floors(file, build_report(db, db.get_run(run)))
    if as_json:
        _emit_json({"file": str(file), "floors": floors})
    else:
        Console().print(f"recorded {len(floors)} floor(s) in {file}")


@floor_app.command("check")
def floor_check(
    run: RunRef,
    file: FloorFile,
    band: Annotated[
        float,
        typer.Option("--band", parser=finite("--band"), help="Fail when slower than floor by more than this."),
    ] = 0.05,
    fast_band: Annotated[
        float, typer.Option("--fast-band", parser=finite("--fast-band"), help="Label FAST when faster by more.")
    ] = 0.02,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Compare a tuning run's winners with the floors: exit 1 if any is slower than its floor beyond the band."""
    from kerntune.deploy.floors import check_floors, read_floors, run_conditions
    from kerntune.report.summary import build_report

    if not (0 <= band < 1 and 0 <= fast_band < 1):
        raise UsageError("--band and --fast-band are fractions in [0, 1), e.g. 0.05")
    db = _store(store)
    report = build_report(db, db.get_run(run))
    floors = read_floors(file, report.run.target.arch, run_conditions(report))
    checks = check_floors(floors, report, band, fast_band)
    if as_json:
        _emit_json([c.__dict__ for c in checks])
    else:
        console = Console()
        for c in checks:
            floor = f"{c.floor_ms:.4g}" if c.floor_ms is not None else "—"
            now = f"{c.measured_ms:.4g}" if c.measured_ms is not None else "—"
            unit = " ms" if c.unit == "ms" else ""
            what = "" if c.unit == "ms" else f" (time {c.unit}, timed interleaved)"
            console.print(f"{c.verdict:12s} {c.key}: floor {floor}{unit}, now {now}{unit}{what}", highlight=False)
    raise typer.Exit(1 if any(c.verdict == "FAIL" for c in checks) else 0)


import kerntune.cli.front  # noqa: E402  (web, mcp)
import kerntune.cli.insight  # noqa: E402  (after the core commands: registers calibrate, inspect, ...)
import kerntune.cli.lab  # noqa: E402  (lab capture, replay, compare, ...)
import kerntune.cli.live  # noqa: E402, F401  (scope, deploy, run, verify, ...)


def main(args: list[str] | None = None) -> None:
    """Console-script entry (``args``: the command line, default ``sys.argv[1:]``): a KerntuneError, a file that
    cannot be read or written, or a damaged or full store is one line on stderr and exit code 2, never a
    traceback."""
    try:
        app(args=args)
    except sqlite3.DatabaseError as exc:
        sys.stderr.write(f"kerntune: error: {store_failure(exc)}\n")
        sys.exit(2)
    except UnicodeEncodeError as exc:  # an argument holding bytes that are not UTF-8 (surrogate escapes)
        sys.stderr.write(f"kerntune: error: an argument is not UTF-8 text ({exc.reason}): give it in UTF-8\n")
        sys.exit(2)
    except KerntuneError as exc:
        sys.stderr.write(f"kerntune: error: {exc}\n")
        sys.exit(exc.exit_code)
    except OSError as exc:  # an output path in a missing folder, a full disk, a file without permission
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"kerntune: error: {where}{exc.strerror or exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
