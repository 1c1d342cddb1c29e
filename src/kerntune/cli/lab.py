"""The lab's commands: ``kerntune lab capture|launches|replay|compare|save|close``."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from kerntune.cli.common import JsonFlag, _emit_json, app, finite
from kerntune.cli.panels import LAB, LoopGroup, deprecated_alias, deprecation
from kerntune.errors import UsageError

lab_app = typer.Typer(
    cls=LoopGroup,
    help="The kernel laboratory: capture one launch of a program, replay it, compare a variant, save it, close.",
)
app.add_typer(lab_app, name="lab", rich_help_panel=LAB)

Capture = Annotated[Path, typer.Argument(help="A capture folder (kerntune lab capture -o DIR).")]
Iterations = Annotated[int, typer.Option("--iterations", help="Timed launches, 1 to 10,000.")]


@lab_app.command(context_settings={"allow_interspersed_args": False})
def capture(
    command: Annotated[list[str], typer.Argument(help="The program after --: python SCRIPT.py ARGS or python -m MOD.")],
    kernel: Annotated[
        str,
        typer.Option(
            "--kernel",
            help="The kernel's name: a Triton function or an OpenCL "
            "kernel; or a library operator as the profiler names it (aten::mm, "
            "aten::addmm, aten::mm.out).",
        ),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="The capture folder to write (must not exist).")],
    nth: Annotated[
        int, typer.Option("--nth", help="Capture the nth launch of that kernel (the nth matching call of an operator).")
    ] = 1,
    match: Annotated[
        str,
        typer.Option(
            "--match",
            help="An operator's calls: count only those whose description "
            "matches this regular expression, e.g. '16x4096:bfloat16, 4096x14336' "
            "(described as aten::mm(16x4096:bfloat16, 4096x14336:bfloat16:T)).",
        ),
    ] = "",
    tensors: Annotated[
        str,
        typer.Option(
            "--tensors",
            help="The tensors saved: reachable (the launch's arguments) or all (every live tensor on its device too).",
        ),
    ] = "reachable",
    old_scope: Annotated[
        str | None, typer.Option("--scope", hidden=True, help="The old name of --tensors (deprecated).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a Python program and capture one launch of a Triton kernel or pyopencl call, or one call of a library
    operator: inputs and outputs as safetensors, a manifest with source (or operator schema), grid, constexprs,
    dtypes, strides, aliasing, device and versions."""
    from kerntune.lab.capture import SCOPES, check_selection
    from kerntune.settings import Settings

    if old_scope is not None:
        deprecation("kerntune lab capture --scope", "kerntune lab capture --tensors")
        tensors = old_scope
    scope = tensors
    if output.exists():
        raise UsageError(f"{output} exists: give a new folder (a capture is never overwritten)")
    if scope not in SCOPES or nth < 1:
        raise UsageError(f"--tensors is {' or '.join(SCOPES)} and --nth counts launches from 1 (got {scope}, {nth})")
    check_selection(kernel, match, scope)
    outcome = _run_armed(
        command,
        {
            "kernel": kernel,
            "out": str(output),
            "nth": nth,
            "scope": scope,
            "match": match,
            "limit_mb": Settings.from_env().capture_max_mb,
        },
    )
    if not outcome["captured"]:
        raise UsageError(_missed(kernel, nth, match, outcome))
    manifest = json.loads((output / "manifest.json").read_text())
    if as_json:
        _emit_json({"capture": str(output), "program_exit": outcome["exit"], **manifest})
        return
    what = manifest["kernel"]["call"] if manifest["kernel"]["language"] == "aten" else f"grid {manifest['grid']}"
    Console().print(
        f"captured launch {nth} of {kernel} into {output}: {what}, {len(manifest['arguments'])} "
        f"arguments, tensors {scope}",
        highlight=False,
    )


def _run_armed(command: list[str], request: dict[str, Any]) -> dict[str, Any]:
    """Run the program under ``kerntune.lab.bootstrap`` with a capture armed by ``request``; what it saw."""
    from kerntune.scope.program import profiled_command

    argv = profiled_command(command, Path(request["out"]))  # validates the program form; the launcher replaces it
    with tempfile.TemporaryDirectory(prefix="kerntune-capture-") as tmp:
        path, result = Path(tmp) / "request.json", Path(tmp) / "result.json"
        path.write_text(json.dumps({**request, "result": str(result)}))
        done = subprocess.run(
            [argv[0], "-m", "kerntune.lab.bootstrap", str(path), *argv[4:]], text=True, capture_output=True
        )
        outcome: dict[str, Any] | None = json.loads(result.read_text()) if result.exists() else None
    if outcome is None:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise UsageError(f"the program did not finish (exit {done.returncode}): {tail}")
    return outcome


@lab_app.command(context_settings={"allow_interspersed_args": False})
def launches(
    command: Annotated[list[str], typer.Argument(help="The program after --: python SCRIPT.py ARGS or python -m MOD.")],
    as_json: JsonFlag = False,
) -> None:
    """Run a Python program and list the kernels it launched through the hooks the lab captures by — Triton
    (kernel[grid] calls, triton.autotune, kerntune's dispatcher), torch.compile's generated kernels, pyopencl — by
    launch count: the dispatch list to pick a capture from where no profiler sees device time (a CPU device).
    On a GPU, kerntune scope gives the list by device-time share."""
    with tempfile.TemporaryDirectory(prefix="kerntune-launches-") as tmp:
        outcome = _run_armed(
            command,
            {
                "kernel": "",
                "out": str(Path(tmp) / "unused"),
                "nth": 1,
                "scope": "reachable",
                "match": "",
                "limit_mb": 0.0,
            },
        )
    total = sum(outcome["calls"].values())
    rows = [
        {
            "name": name,
            "kind": outcome.get("kinds", {}).get(name, ""),
            "launches": count,
            "share": count / total if total else 0.0,
        }
        for name, count in outcome["calls"].items()
    ]
    if as_json:
        _emit_json({"program": command, "program_exit": outcome["exit"], "launches": rows})
        return
    console = Console()
    for row in rows:
        console.print(f"{row['launches']:>8}  {row['share']:6.1%}  {row['kind']:<9} {row['name']}", highlight=False)
    console.print(f"{total} launches of {len(rows)} kernels; program exit {outcome['exit']}", highlight=False)


def _missed(kernel: str, nth: int, match: str, outcome: dict[str, Any]) -> str:
    """Why nothing was captured, naming what the program did launch."""
    if outcome.get("refused"):
        return f"no capture: {outcome['refused']}"
    matching = f" matching {match!r}" if match else ""
    text = (
        f"no capture: {kernel} launched {outcome['seen']} times{matching}, --nth was {nth} (program exit "
        f"{outcome['exit']})"
    )
    if outcome.get("in_graph_capture"):
        text += f"; {outcome['in_graph_capture']} more calls were inside CUDA graph capture, which is never saved"
    calls = outcome.get("calls") or {}
    if calls:
        text += "; launched: " + ", ".join(f"{name} ×{count}" for name, count in list(calls.items())[:8])
    if outcome.get("errors"):
        text += f"; capture errors: {'; '.join(outcome['errors'])}"
    return text


def _job(folder: Path, request: dict[str, Any]) -> dict[str, Any]:
    from kerntune.lab.replay import load_capture
    from kerntune.lab.session import run_job

    load_capture(folder)  # a bad capture is refused here, before a process is started
    return run_job(folder, request)


@lab_app.command()
def replay(
    folder: Capture,
    iterations: Iterations = 20,
    mode: Annotated[str, typer.Option("--mode", help="isolated, sustained or replays.")] = "isolated",
    repeats: Annotated[int, typer.Option("--repeats", help="Replays in mode 'replays'.")] = 5,
    as_json: JsonFlag = False,
) -> None:
    """Replay a captured launch in isolation: time it (on a GPU), and check it reproduces the captured output."""
    from kerntune.lab.replay import check_mode

    result = _job(folder, {"job": "replay", "mode": mode, "iterations": iterations, "repeats": repeats})
    check_mode(result, mode)
    if as_json:
        _emit_json(result)
        return
    timing = (
        f"median {result['median_ms'] * 1e3:.2f} µs over {iterations}"
        if result["timing_claimed"]
        else "no timing claimed (Triton interpreter or no GPU)"
    )
    delta = f", {result['delta_vs_previous']:+.1%} vs the previous replay" if "delta_vs_previous" in result else ""
    Console().print(
        f"{mode}: {timing}{delta}; reproduces the captured output: {result['reproduces_capture']}", highlight=False
    )


@lab_app.command()
def compare(
    folder: Capture,
    variant: Annotated[
        Path | None, typer.Option("--variant", help="A Python file defining the kernel under its name.")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="NAME=VALUE: another constexpr or launch "
            "option (num_warps...) for the variant; with --spec, a "
            "parameter of the spec's config. Repeat it.",
        ),
    ] = None,
    spec: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="A captured operator call (aten::mm...): the spec "
            "whose kernel takes it, at its default config with --set over "
            "it.",
        ),
    ] = None,
    iterations: Iterations = 20,
    rtol: Annotated[
        float | None,
        typer.Option("--rtol", parser=finite("--rtol", low=0.0), help="Validate by relative error (default bitwise)."),
    ] = None,
    counters: Annotated[
        bool,
        typer.Option(
            "--counters",
            help="Also profile one launch of each with Nsight Compute: compute / memory SOL %, DRAM, occupancy.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Replay the captured kernel and a variant under the same conditions; the variant/original time ratio from
    the two timed launch by launch side by side (A B B A, cold) with its 95% interval, each one's own replay (time,
    resources: registers, spills, shared memory, occupancy, matrix instructions), and validation of the variant's
    outputs against the original's. Exit 1 when validation fails."""
    if variant is None and not overrides and spec is None:
        raise UsageError(
            "give the variant: --variant FILE, --set NAME=VALUE, or both (for an operator call, --spec SPEC)"
        )
    changes = dict(_assignment(text) for text in overrides or [])
    request = {
        "job": "compare",
        "variant": str(variant.resolve()) if variant else None,
        "overrides": changes,
        "spec": str(spec.resolve()) if spec else None,
        "iterations": iterations,
        "rtol": rtol,
    }
    if counters:  # refused before the comparison runs, so a refusal leaves no row in the history
        from kerntune.lab.counters import check_counters
        from kerntune.lab.replay import load_capture

        check_counters(load_capture(folder))
    result = _job(folder, request)
    if counters:
        from kerntune.lab.counters import profile_pair

        result["counters"] = profile_pair(folder, load_capture(folder), request)
    if as_json:
        _emit_json(result)
    else:
        check = result["validation"]
        where = (
            ""
            if check["passed"]
            else (
                f": {check['argument']} differs at {check['first_index']} "
                f"({check['got']} vs {check['expected']}), {check['mismatches']} of "
                f"{check['numel']} elements"
                if "first_index" in check
                else f": {check['argument']} relative error {check['error']}"
            )
        )
        side = result.get("interleaved")
        ratio = (
            f"time ratio variant/original {result['ratio']:.3f} (95% CI {side['ci'][0]:.3f}–{side['ci'][1]:.3f}, "
            f"{side['pairs']} pairs interleaved {side['order']}; medians {side['original_ms'] * 1e3:.2f} → "
            f"{side['variant_ms'] * 1e3:.2f} µs)"
            if result["ratio"] and side
            else "no timing claimed"
        )
        second = (side or {}).get("second_timer")
        if second and "error" in second:
            ratio += f"; second timer (profiler) not available: {second['error']}"
        elif second:
            ratio += (
                f"; profiler-timed ratio {second['ratio']:.3f} (95% CI {second['ci'][0]:.3f}–"
                f"{second['ci'][1]:.3f}): {'agrees' if second['agrees'] else 'DISAGREES'} within 1%"
            )
        console = Console()
        error = f", worst {check['error']:.3g}" if check["passed"] and "error" in check else ""
        console.print(
            f"{ratio}; validation ({check['rule']}{error}) {'passed' if check['passed'] else 'FAILED'}{where}",
            highlight=False,
        )
        for role, measured in (("original", result["original"]), ("variant", result["variant_result"])):
            console.print(f"  {role}: {_describe(measured, (result.get('counters') or {}).get(role))}", highlight=False)
    raise typer.Exit(0 if result["validation"]["passed"] else 1)


def _describe(measured: dict[str, Any], counted: dict[str, Any] | None) -> str:
    """One line: time and launch rate, resources, occupancy, matrix instructions, and counters when profiled."""
    res = measured.get("resources") or {}
    parts = [
        f"{measured['median_ms'] * 1e3:.2f} µs, {measured['launches_per_s']:,.0f} launches/s"
        if measured.get("timing_claimed")
        else "untimed"
    ]
    parts += [
        f"{res[k]} {label}"
        for k, label in (
            ("registers", "registers"),
            ("spills", "spills"),
            ("shared_bytes", "B shared"),
            ("matrix_instructions", "matrix instructions"),
        )
        if k in res
    ]
    if "occupancy" in res:
        parts.append(f"occupancy {res['occupancy']['theoretical_pct']}% ({res['occupancy']['limiter']})")
    if counted:
        parts.append(
            f"SOL compute {counted.get('compute_sol_pct', 0):.1f}% memory "
            f"{counted.get('memory_sol_pct', 0):.1f}%, achieved occupancy "
            f"{counted.get('achieved_occupancy_pct', 0):.1f}%"
        )
    return ", ".join(parts)


def _assignment(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--set {text!r}: write NAME=VALUE, e.g. --set BLOCK_K=64")
    try:
        return name, json.loads(raw)
    except ValueError:
        return name, raw


@lab_app.command()
def save(
    folder: Capture,
    variant: Annotated[Path | None, typer.Option("--variant", help="A source variant to write.")] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="NAME=VALUE: a config variant to write into the program's dispatch table. Repeat it."
        ),
    ] = None,
    spec: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="A captured operator call: the spec whose kernel "
            "(at --set over its default config) took it, to serve from "
            "--table.",
        ),
    ] = None,
    table: Annotated[
        Path | None,
        typer.Option(
            "--table",
            help="With --set: the table to write (default: the "
            "one the program's dispatcher read); with --spec, the served "
            "table (kerntune run --table).",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Save a variant that passed its comparison: a source variant over the kernel's definition in its file
    (atomically, with a backup in the capture; refused when the file changed since the capture), a config
    variant (--set) as the dispatch table entry of the captured launch's key, which the live program reads, or a
    spec's kernel (--spec) that took a captured operator call faster than the library, as the served table's
    entry of that call's key."""
    if spec is not None:
        if variant is not None or table is None:
            raise UsageError(
                "--spec saves into a served table: give --table PATH (and --set for the config), not --variant"
            )
        from kerntune.lab.save_config import save_served

        done = save_served(folder, spec, dict(_assignment(t) for t in overrides or []), table)
        text = (
            f"wrote {json.dumps(done['config'])} for {done['key']} into {done['table']} (time ratio to the "
            f"library {done['ratio']:.3f}); serve it with kerntune run --table {done['table']} -- ..."
        )
    elif (variant is None) == (not overrides):
        raise UsageError(
            "give one variant to save: --variant FILE (source) or --set NAME=VALUE (config); save a "
            "source variant, capture again, then compare and save configs"
        )
    elif table is not None and variant is not None:
        raise UsageError("--table goes with --set (a config variant); a source variant is written into its file")
    elif variant is not None:
        from kerntune.lab.session import save as save_source

        done = save_source(folder, variant)
        text = f"wrote {done['file']} lines {done['lines'][0]}-{done['lines'][1]}; backup {done['backup']}"
    else:
        from kerntune.lab.save_config import save_config

        done = save_config(folder, dict(_assignment(t) for t in overrides or []), table)
        text = f"wrote {json.dumps(done['config'])} for {done['key']} into {done['table']}" + (
            f" (was {json.dumps(done['replaced'])}; backup {done['backup']})" if done["replaced"] else ""
        )
    from kerntune.lab.session import record

    record(folder, {"job": "save", "saved": text})  # the capture's history says what was saved where
    if as_json:
        _emit_json(done)
        return
    Console().print(text, highlight=False)


@lab_app.command()
def close(folder: Capture, as_json: JsonFlag = False) -> None:
    """Delete the captured inputs and outputs; keep the manifest, results, logs and source backups."""
    from kerntune.lab.session import close as run_close

    done = run_close(folder)
    if as_json:
        _emit_json(done)
        return
    Console().print(
        f"removed {', '.join(done['removed']) or 'nothing'}; kept {', '.join(done['kept'])}", highlight=False
    )


_PROGRAM_ARGS = {"allow_interspersed_args": False}
deprecated_alias(app, "capture", "kerntune lab capture", capture, _PROGRAM_ARGS)
deprecated_alias(app, "launches", "kerntune lab launches", launches, _PROGRAM_ARGS)
deprecated_alias(app, "replay", "kerntune lab replay", replay)
