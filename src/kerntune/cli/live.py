"""``kerntune`` commands for the live path: scope a program, deploy, train, serve (``run``), verify, admit, migrate;
Kernel Tuner caches in and out of the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from kerntune.cli.common import JsonFlag, RunRef, StoreOpt, _emit_json, _store, app, finite
from kerntune.cli.panels import DEPLOY, MEASURE, STORE
from kerntune.errors import UsageError


@app.command(rich_help_panel=DEPLOY)
def deploy(
    run: RunRef,
    table: Annotated[Path, typer.Option("--table", help="The table to write or merge into: *.json.")],
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a tuning run's gated winners into a dispatch table (JSON for kerntune.runtime, a .py module and a C .inc
    beside it), atomically, with provenance; an existing table for the same device is merged. For a spec served in
    place of a library operator, a winner not faster than the library baseline it was confirmed beside is
    named and marked: kerntune run leaves its key to the library, a program calling the kernel itself still
    gets it."""
    from kerntune.deploy.artifacts import deploy as run_deploy

    done = run_deploy(_store(store), run, table)
    if as_json:
        _emit_json(done)
    else:
        console = Console()
        console.print(f"{len(done['table']['entries'])} entries: " + ", ".join(done["written"]), highlight=False)
        for left in done["left_to_library"]:
            console.print(f"left to the library under kerntune run at {left['shape']}: {left['why']}", highlight=False)


@app.command(rich_help_panel=DEPLOY)
def train(
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar="TUNING_RUNS",
            help="Sweeps: tuning runs (ids, unique prefixes or 'last') of one op, kernel, dtype and device.",
        ),
    ],
    table: Annotated[Path, typer.Option("--table", help="The table to write: *.json (.py and .inc beside it).")],
    holdout_every: Annotated[
        int, typer.Option("--holdout-every", help="Hold out every k-th shape by work size for scoring (0: none).")
    ] = 3,
    noise: Annotated[
        float,
        typer.Option("--noise", help="Keep an exact entry only where it beats its rule by more than this fraction."),
    ] = 0.02,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            help="A segment dimension, most significant first: FIELD "
            "or FIELD:OCTAVES (M, M*N, N/K, N*K:2...). Repeat it. "
            "Default for matmuls: M*N.",
        ),
    ] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace an existing table file.")] = False,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Train a compact table from sweeps: fallback rules per segment (output size M*N by octave for a matmul
    by default; least total regret), exact entries only where they beat their rule beyond the noise band; scored
    on held-out shapes through the live dispatcher."""
    from kerntune.deploy.train import TrainOptions
    from kerntune.deploy.train import train as run_train

    options = TrainOptions(holdout_every=holdout_every, noise=noise, by=tuple(by or ()))
    done = run_train(_store(store), runs, table, options, replace=replace)
    if as_json:
        _emit_json({"report": done["report"], "written": done["written"], "table": done["table"]})
        return
    r, held = done["report"], done["report"]["held_out"]
    out = Console()
    out.print(
        f"{r['shapes']} shapes ({r['training_shapes']} training, {r['held_out_shapes']} held out), "
        f"{r['configs']} configs: {r['rules']} rules and {r['exact_entries']} exact entries; exact-hit rate "
        f"{r['exact_hit_rate']:.0%} on the training shapes",
        highlight=False,
    )
    if held:
        regret = "n/a" if held["geomean_regret"] is None else f"{held['geomean_regret']:.2%}"
        worst = "n/a" if held["max_regret"] is None else f"{held['max_regret']:.2%}"
        out.print(
            f"held out: coverage {held['coverage']:.0%}, geometric-mean regret {regret} (worst {worst}), "
            f"{held['unscored']} unscored (their chosen config was not timed there)",
            highlight=False,
        )
    out.print("written: " + ", ".join(done["written"]), highlight=False)


@app.command(rich_help_panel=DEPLOY)
def migrate(
    table: Annotated[Path, typer.Argument(help="A dispatch table (*.json) written by kerntune deploy.")],
    to: Annotated[str, typer.Option("--to", help="The target device: ARCH (sm_100, gfx942, ...).")],
    compute_units: Annotated[int | None, typer.Option("--compute-units", help="Its SM / CU count.")] = None,
    device_name: Annotated[str | None, typer.Option("--device-name", help="Its device name.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List what a table tuned on one device must have tuned again on another (nothing is copied across)."""
    from kerntune.deploy.migrate import migrate as run_migrate

    target = {"arch": to, "compute_units": compute_units, "device_name": device_name}
    found = run_migrate(table, {k: v for k, v in target.items() if v is not None})
    if as_json:
        _emit_json(found)
        return
    Console().print(
        f"{len(found['retune'])} entries to tune again on {found['to']}, {found['still_valid']} "
        f"already keyed for it (table device {found['device']})",
        highlight=False,
    )
    for command in found["commands"]:
        Console().print(command, highlight=False, soft_wrap=True)


Program = Annotated[list[str], typer.Argument(help="The program after --: python SCRIPT.py ARGS or python -m MOD.")]


@app.command(rich_help_panel=MEASURE, context_settings={"allow_interspersed_args": False})
def scope(
    command: Program,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="Append the GEMM-like operators seen, one corpus line each (for kerntune tune --shapes-from).",
        ),
    ] = None,
    skip: Annotated[
        float,
        typer.Option(
            "--skip",
            parser=finite("--skip", low=0.0),
            help="Seconds of the start left out (warm-up, weight upload), as nsys --delay.",
        ),
    ] = 0.0,
    duration: Annotated[
        float | None,
        typer.Option(
            "--duration",
            parser=finite("--duration", low=0.0),
            help="Seconds counted after --skip (default: to the end).",
        ),
    ] = None,
    region: Annotated[
        str | None,
        typer.Option(
            "--region", help="Count only the ranges the program marks with torch.profiler.record_function(NAME)."
        ),
    ] = None,
    trace: Annotated[Path | None, typer.Option("--trace", help="Keep the profiler's Chrome trace here.")] = None,
    top: Annotated[int, typer.Option("--top", help="Kernels to list.")] = 20,
    as_json: JsonFlag = False,
) -> None:
    """Run a Python program under torch.profiler: device time in a steady-state window by class of kernel and by
    kernel, how busy the device was and what faster kernels could do, the GEMM-like operators with shapes,
    dtypes, layouts and bias; a shape corpus."""
    from kerntune.scope.program import scope as run_scope
    from kerntune.scope.trace import Window

    if region and (skip or duration is not None):
        raise UsageError("--region marks the window itself: give it without --skip or --duration")
    found = run_scope(command, corpus, top, Window(skip, duration, region), trace)
    if as_json:
        _emit_json(found)
        return
    out = Console()
    if not found["gpu"]:
        out.print(
            "CPU only: torch sees no GPU, so there is no device time; the operators below ran on the CPU",
            highlight=False,
        )
    window = found["window"]
    out.print(
        f"window: {window['describe']}, {window['wall_us'] / 1e3:.3f} ms; device time "
        f"{found['device_us'] / 1e3:.3f} ms — {found['verdict']}",
        highlight=False,
        soft_wrap=True,
    )
    for label, us in found["classes"].items():
        share = us / found["device_us"] if found["device_us"] else 0.0
        out.print(f"{share:6.1%} {us / 1e3:9.3f} ms  {label}", highlight=False)
    for k in found["kernels"]:
        share = "" if k["share"] is None else f"{k['share']:6.1%}"
        source = f"  ({k['source']})" if k.get("source") else ""
        out.print(f"{share} {k['launches']:6d}x {k['class']:<28} {k['name']}{source}", highlight=False, soft_wrap=True)
    for g in found["gemms"]:
        shape = ",".join(f"{k}={v}" for k, v in g["shape"].items())
        took = "" if g["device_us"] is None else f", {g['device_us'] / 1e3:.3f} ms"
        out.print(
            f"{g['op']} {shape} {g['dtype']} layout={g['layout']} bias={g['bias']}: {g['calls']} calls{took}",
            highlight=False,
        )
    if found["corpus"]:
        out.print(f"GEMM shapes appended to {found['corpus']}", highlight=False)


@app.command("run", rich_help_panel=DEPLOY, context_settings={"allow_interspersed_args": False})
def run_served(
    command: Program,
    table: Annotated[
        Path, typer.Option("--table", help="The deployed table (kerntune deploy TUNING_RUN --table T.json).")
    ],
    spec: Annotated[
        list[Path] | None,
        typer.Option(
            "--spec",
            help="A spec serving library operators; repeat for several.",
        ),
    ] = None,
    spec_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--spec-dir",
            help="A folder where the specs the table's entries name are found (by name and kernel source hash); "
            "a spec path written in the table is never imported. Repeat for several.",
        ),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode", help="explore: every entry not rejected; production: admitted entries only (fail closed)."
        ),
    ] = "explore",
    backend: Annotated[
        str, typer.Option("--backend", help="The dispatch key served: CUDA, or CPU (the Triton interpreter).")
    ] = "CUDA",
) -> None:
    """Run an unmodified Python program with a table served to it: each library GEMM call (aten::mm, addmm and
    their .out forms, as nn.Linear and torch.compile reach them) whose key the table holds runs the tuned kernel;
    every other call runs the library's own. The specs are those given with --spec or found in --spec-dir by the
    name and kernel source hash the entries carry (a spec path written in the table is never imported); an entry
    whose config breaks its spec's space or constraints is never served. The program ends as under python alone:
    its exit code, sys.exit message, traceback and KeyboardInterrupt."""
    from kerntune.runtime.launch import main
    from kerntune.scope.program import program_args

    if mode not in ("explore", "production") or backend not in ("CUDA", "CPU"):
        raise UsageError(f"--mode is explore or production and --backend CUDA or CPU (got {mode}, {backend})")
    options = [
        "--table",
        str(table),
        "--mode",
        mode,
        "--backend",
        backend,
        *(a for s in spec or [] for a in ("--spec", str(s))),
        *(a for d in spec_dir or [] for a in ("--spec-dir", str(d))),
    ]
    raise typer.Exit(main([*options, "--", *program_args(command)]))


@app.command(rich_help_panel=DEPLOY, context_settings={"allow_interspersed_args": False})
def verify(
    command: Program,
    processes: Annotated[int | None, typer.Option("--processes", help="Fresh processes per side of the A/B.")] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            help="Regex whose first group is the program's metric "
            "(lower is better; default: the last number it prints).",
        ),
    ] = None,
    no_ab: Annotated[bool, typer.Option("--no-ab", help="Engagement only, no end-to-end A/B.")] = False,
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            help="Wall-clock bound on the end-to-end A/B (180s, 3m): a stored A/A band for the program is reused; "
            "the interval reached when it ends is reported.",
        ),
    ] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write the report (JSON) here, for admit.")] = None,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Prove the deployed table engaged: every entry with the kernel and calls it served, every miss with its
    key, the hit rate by calls; then a fresh-process A/B of table off vs on. Exit 1 if an entry never engaged
    while others served calls; a table that served no call is said as such, with its counts, and exits 0.
    The engagement is said on stderr (and written to --report) before the A/B starts."""
    import json

    from kerntune.deploy.verify import budget_seconds
    from kerntune.deploy.verify import verify as run_verify
    from kerntune.settings import Settings

    budget_s = None if budget is None else budget_seconds(budget)

    def engaged(found: dict[str, Any]) -> None:  # said (and written) before the A/B: stopping it keeps this
        if report is not None:
            report.write_text(json.dumps(found, indent=1))
        if not no_ab and found["serves_nothing"] is None:
            rate = "n/a" if found["hit_rate"] is None else f"{found['hit_rate']:.1%}"
            typer.echo(
                f"engagement: {len(found['entries']) - len(found['never_engaged'])} of "
                f"{len(found['entries'])} entries engaged, hit rate {rate} of {found['calls']} calls"
                + (f" (report: {report})" if report is not None else "")
                + "; the end-to-end A/B, table off against on in fresh processes, runs next",
                err=True,
            )

    found = run_verify(
        command,
        _store(store),
        Settings.from_env(),
        processes=processes,
        metric=metric,
        end_to_end=not no_ab,
        engaged=engaged,
        budget_s=budget_s,
    )
    if report is not None:
        report.write_text(json.dumps(found, indent=1))
    if as_json:
        _emit_json(found)
    else:
        _print_verify(found)
    raise typer.Exit(1 if found["never_engaged"] and not found["serves_nothing"] else 0)


def _in_place(entry: dict[str, Any]) -> str:
    """An entry's device time per call in the program, beside the tune's for it and for the library."""
    here = entry.get("device_us_per_call")
    if here is None:
        return ""
    tuned, library = entry.get("tuned_us"), entry.get("tuned_library_us")
    if tuned is None:
        return f"; {here:.1f} µs a call in place"
    library_said = "" if library is None else f", library {library:.1f} µs"
    return f"; {here:.1f} µs a call in place (tuned {tuned:.1f} µs{library_said})"


def _print_verify(found: dict[str, Any]) -> None:
    out = Console()
    for e in found["entries"]:
        seen = (
            ""
            if e["profiled_launches"] is None
            else (
                f", profiler saw {e['profiled_launches']} launches of "
                f"{', '.join(e['profiled_kernels']) or 'its kernels'}"
                + (" by its calls" if e.get("profiled_by") == "operator" else " (by kernel name, all entries)")
                + (
                    f", {e['other_launches']} of other kernels ({', '.join(e['other_kernels'])})"
                    if e.get("other_launches")
                    else ""
                )
            )
        )
        mark = "engaged" if e["engaged"] else "NEVER ENGAGED"
        out.print(
            f"{mark:>13}  {e['kernel']} {e['config'] or ''} [{e['status']}] {e['calls']} calls{seen}"
            f"{_in_place(e)}  {e['key']}",
            highlight=False,
            soft_wrap=True,
        )
    if found.get("untied_launches"):
        out.print(
            f"{found['untied_launches']:>13}  launches of the tuned kernels enclosed by no operator call "
            "(CUDA-graph replays): counted by kernel name, not per entry",
            highlight=False,
            soft_wrap=True,
        )
    for m in found["misses"]:
        took = "" if m.get("device_us") is None else f", {m['device_us'] / 1e3:.3f} ms on the device"
        out.print(
            f"{'miss':>13}  {m['kernel']} -> {m['decision']} {m['config']}: {m['calls']} calls{took}  {m['key']}",
            highlight=False,
            soft_wrap=True,
        )
    for d in found["disabled"]:
        out.print(f"table not applied ({d['kernel']}): {d['reason']}", highlight=False, soft_wrap=True)
    for key, why in found.get("rejected", {}).items():
        out.print(f"{'rejected':>13}  {key}: {why}", highlight=False, soft_wrap=True)
    for spec in found.get("unresolved_specs", []):
        out.print(f"{'no spec':>13}  {spec}: give it with --spec or --spec-dir", highlight=False, soft_wrap=True)
    for op, c in found.get("served_ops", {}).items():
        out.print(
            f"{'served op':>13}  {op}: {c['served']} calls served, {c['library']} to the library, {c['failed']} "
            "failed (the library ran them)",
            highlight=False,
            soft_wrap=True,
        )
    rate = "n/a" if found["hit_rate"] is None else f"{found['hit_rate']:.1%}"
    share = "n/a" if found["device_share"] is None else f"{found['device_share']:.1%}"
    bound = "n/a" if found["amdahl_bound"] is None else f"{found['amdahl_bound']:.2f}x faster at most"
    out.print(
        f"hit rate {rate} of {found['calls']} calls; dispatched kernels {share} of device time (Amdahl bound {bound})",
        highlight=False,
    )
    if found.get("gates"):
        planned = found.get("planned_forms")
        launched = "" if planned is None else f"; {planned} served forms launched from C++ by a plan"
        out.print(f"served calls decided by the {' and the '.join(found['gates'])} gate{launched}", highlight=False)
    if found.get("serves_nothing"):
        out.print(found["serves_nothing"] + "; no end-to-end A/B (table off and on run alike)", highlight=False)
    e2e = found.get("end_to_end")
    if e2e:
        out.print(f"end to end, table on vs off: {e2e['verdict']} — {e2e['reason']}", highlight=False, soft_wrap=True)
        for side, name in (("A", "table off"), ("B", "table on")):
            values = [f"{p['value']:.4g}" for p in e2e.get("processes", []) if p["side"] == side]
            if values:
                out.print(f"{name:>13}  {', '.join(values)} (each process, in run order)", highlight=False)


@app.command(rich_help_panel=DEPLOY)
def admit(
    table: Annotated[Path, typer.Argument(help="The deployed table (*.json).")],
    verified: Annotated[Path, typer.Option("--verified", help="The report of `kerntune verify --report`.")],
    noise: Annotated[
        float,
        typer.Option("--noise", parser=finite("--noise", low=0.0), help="Least win over the default config to count."),
    ] = 0.02,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Promote entries on evidence: admitted = passed its gate + won beyond noise over the default + seen engaged
    by verify; gate + win alone = promotion candidate; a failed gate = rejected. Writes the table back."""
    from kerntune.deploy.admit import admit as run_admit

    done = run_admit(_store(store), table, verified, noise)
    if as_json:
        _emit_json(done)
        return
    out = Console()
    for row in done["entries"]:
        out.print(
            f"{row['status']:>19}  {row['key']}" + (f"  ({'; '.join(row['why'])})" if row["why"] else ""),
            highlight=False,
            soft_wrap=True,
        )
    out.print(
        ", ".join(f"{n} {s}" for s, n in done["counts"].items()) + "; written: " + ", ".join(done["written"]),
        highlight=False,
    )


@app.command("import-kt", rich_help_panel=STORE)
def import_kt(
    cache: Annotated[Path, typer.Argument(help="A Kernel Tuner cache file (JSON).")],
    shape: Annotated[
        str | None,
        typer.Option("--shape", help="Names for the problem size's dimensions, e.g. N or M,N (default x, y, z)."),
    ] = None,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Bring a Kernel Tuner cache into the store as a tuning run, every raw sample kept: median, interval and the
    spread its mean of 7 hides."""
    from kerntune.interop.kernel_tuner import import_cache

    done = import_cache(_store(store), cache, [n.strip() for n in shape.split(",")] if shape else None)
    if as_json:
        _emit_json(done)
        return
    out = Console()
    out.print(
        f"tuning run {done['run']}: {done['configs']} configs of {done['kernel']} on {done['device']} "
        f"({done['failed']} failed)",
        highlight=False,
    )
    for label, best in (
        ("best by Kernel Tuner's mean", done["best_by_kt_mean"]),
        ("best by median", done["best_by_median"]),
    ):
        if best:
            out.print(
                f"{label}: {best['config']} — mean {best['kt_time_ms']:.4g} ms, median {best['median_ms']:.4g} "
                f"ms, {best['samples']} samples spread {best['spread']:.1%}",
                highlight=False,
            )


@app.command("export-kt", rich_help_panel=STORE)
def export_kt(
    run: RunRef,
    output: Annotated[Path, typer.Option("-o", "--output", help="The cache file to write.")],
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a tuning run (one shape) as a Kernel Tuner cache file."""
    from kerntune.interop.kernel_tuner import export_run

    done = export_run(_store(store), run, output)
    if as_json:
        _emit_json(done)
    else:
        Console().print(
            f"{done['configs']} configs of tuning run {done['run']} written to {done['written']}", highlight=False
        )
