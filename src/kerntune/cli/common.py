"""What every ``kerntune`` command shares: the typer app, common options, the store, JSON output, and the
parsers of --shape and --budget."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from kerntune.cli.panels import LoopGroup
from kerntune.errors import UsageError
from kerntune.settings import Settings
from kerntune.store import Store

app = typer.Typer(
    cls=LoopGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Tune GPU kernels honestly: measure, search, gate on correctness, and report what really won.",
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")]
RunRef = Annotated[str, typer.Argument(help="Run id, a unique prefix of it, or 'last'.")]
StoreOpt = Annotated[
    Path | None, typer.Option("--store", help="Store folder (default: $KERNTUNE_HOME or ./.kerntune).")
]


def _store(path: Path | None) -> Store:
    settings = Settings.from_env()
    return Store(path if path is not None else settings.home)


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def parse_shape(text: str) -> dict[str, str]:
    """``M=4096,N=4096`` → {"M": "4096", "N": "4096"}."""
    shape: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise UsageError(f"--shape {text!r}: expected NAME=VALUE pairs separated by commas, e.g. M=4096,N=4096")
        name, value = (s.strip() for s in part.split("=", 1))
        if not name or not value:
            raise UsageError(f"--shape {text!r}: empty name or value in {part!r}")
        shape[name] = value
    if not shape:
        raise UsageError("--shape needs at least one NAME=VALUE")
    return shape


def exit_on_row_errors(rows: list[dict[str, Any]], what: Callable[[dict[str, Any]], str]) -> None:
    """One stderr line per row that carries an ``error`` (``what(row)`` names it), then exit 2 if any did."""
    failed = [r for r in rows if "error" in r]
    for r in failed:
        sys.stderr.write(f"kerntune: error: {what(r)}: {r['error']}\n")
    raise typer.Exit(2 if failed else 0)
