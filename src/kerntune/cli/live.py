"""``kerntune`` commands for the live path: deploy, train, migrate (and what proves a table engaged)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kerntune.cli.common import JsonFlag, StoreOpt, _emit_json, _store, app


@app.command()
def deploy(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix of it, or 'last'.")],
    table: Annotated[Path, typer.Option("--table", help="The table to write or merge into: *.json.")],
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a run's gated winners into a dispatch table (JSON for kerntune.runtime, a .py module and a C .inc
    beside it), atomically, with provenance; an existing table for the same device is merged."""
    from kerntune.pipeline.deploy import deploy as run_deploy

    done = run_deploy(_store(store), run, table)
    if as_json:
        _emit_json(done)
    else:
        Console().print(f"{len(done['table']['entries'])} entries: " + ", ".join(done["written"]), highlight=False)


@app.command()
def train(
    runs: Annotated[list[str], typer.Argument(help="Sweep runs (ids, unique prefixes or 'last'): one op, kernel, "
                                              "dtype and device.")],
    table: Annotated[Path, typer.Option("--table", help="The table to write: *.json (.py and .inc beside it).")],
    holdout_every: Annotated[int, typer.Option("--holdout-every", help="Hold out every k-th shape by work size for "
                                               "scoring (0: none).")] = 3,
    noise: Annotated[float, typer.Option("--noise", help="Keep an exact entry only where it beats its rule by "
                                         "more than this fraction.")] = 0.02,
    aspect: Annotated[str | None, typer.Option("--aspect", help="Aspect field, e.g. N/K ('' for none).")] = None,
    work: Annotated[str | None, typer.Option("--work", help="Work-size field, e.g. M*N*K or N*K.")] = None,
    octaves: Annotated[float, typer.Option("--octaves", help="Work segment width in powers of two.")] = 2.0,
    replace: Annotated[bool, typer.Option("--replace", help="Replace an existing table file.")] = False,
    store: StoreOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Train a compact table from sweeps: fallback rules by aspect bucket x work segment (least total regret),
    exact entries only where they beat their rule beyond the noise band; scored on held-out shapes."""
    from kerntune.pipeline.train import TrainOptions
    from kerntune.pipeline.train import train as run_train

    options = TrainOptions(holdout_every=holdout_every, noise=noise, aspect=aspect, work=work, octaves=octaves)
    done = run_train(_store(store), runs, table, options, replace=replace)
    if as_json:
        _emit_json({"report": done["report"], "written": done["written"], "table": done["table"]})
        return
    r, held = done["report"], done["report"]["held_out"]
    out = Console()
    out.print(f"{r['shapes']} shapes ({r['training_shapes']} training, {r['held_out_shapes']} held out), "
              f"{r['configs']} configs: {r['rules']} rules and {r['exact_entries']} exact entries; exact-hit rate "
              f"{r['exact_hit_rate']:.0%} on the training shapes", highlight=False)
    if held:
        regret = "n/a" if held["geomean_regret"] is None else f"{held['geomean_regret']:.2%}"
        worst = "n/a" if held["max_regret"] is None else f"{held['max_regret']:.2%}"
        out.print(f"held out: coverage {held['coverage']:.0%}, geometric-mean regret {regret} (worst {worst}), "
                  f"{held['unscored']} unscored (their chosen config was not timed there)", highlight=False)
    out.print("written: " + ", ".join(done["written"]), highlight=False)


@app.command()
def migrate(
    table: Annotated[Path, typer.Argument(help="A dispatch table (*.json) written by kerntune deploy.")],
    to: Annotated[str, typer.Option("--to", help="The target device: ARCH (sm_100, gfx942, ...).")],
    compute_units: Annotated[int | None, typer.Option("--compute-units", help="Its SM / CU count.")] = None,
    device_name: Annotated[str | None, typer.Option("--device-name", help="Its device name.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List what a table tuned on one device must have tuned again on another (nothing is copied across)."""
    from kerntune.pipeline.migrate import migrate as run_migrate

    target = {"arch": to, "compute_units": compute_units, "device_name": device_name}
    found = run_migrate(table, {k: v for k, v in target.items() if v is not None})
    if as_json:
        _emit_json(found)
        return
    Console().print(f"{len(found['retune'])} entries to tune again on {found['to']}, {found['still_valid']} "
                    f"already keyed for it (table device {found['device']})", highlight=False)
    for command in found["commands"]:
        Console().print(command, highlight=False, soft_wrap=True)
