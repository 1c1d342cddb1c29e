"""What every ``kerntune`` command shares: the typer app, common options, the store, JSON output, and the
parsers of --shape and --budget."""

from __future__ import annotations

import contextlib
import json
import math
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from kerntune.cli.panels import LoopGroup
from kerntune.errors import UsageError
from kerntune.model.json_types import finite_or_none
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
RunRef = Annotated[
    str, typer.Argument(metavar="TUNING_RUN", help="A tuning run's id, a unique prefix of it, or 'last'.")
]
StoreOpt = Annotated[
    Path | None, typer.Option("--store", help="Store folder (default: $KERNTUNE_HOME or ./.kerntune).")
]


OPENED_STORES: list[Path] = []
"""The store files this command opened, newest last: a damaged store's error names the file (``main``)."""


def _store(path: Path | None) -> Store:
    settings = Settings.from_env()
    store = Store(path if path is not None else settings.home)
    OPENED_STORES.append(store.path)
    return store


def _emit_json(data: Any) -> None:
    """``data`` as JSON on stdout, every NaN and infinity as null: JSON has no such numbers (a store written before
    they were refused may still hold one)."""
    sys.stdout.write(json.dumps(finite_or_none(data), indent=2, default=str, allow_nan=False) + "\n")


def finite(flag: str, low: float | None = None) -> Callable[[str | float], float]:
    """A parser for a float option: NaN and infinities (which the store's JSON cannot hold) and values under
    ``low`` are a one-line usage error naming ``flag``."""

    def parse(text: str | float) -> float:
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"{flag} {text!r}: give a number, e.g. 0.5") from None
        if not math.isfinite(value):
            raise UsageError(f"{flag} {text!r}: give a finite number, e.g. 0.5")
        if low is not None and value < low:
            raise UsageError(f"{flag} {text!r}: give a number of at least {low:g}")
        return value

    return parse


def bounded(flag: str, low: int, high: int) -> Callable[[str | int], int]:
    """A parser for an integer option in [low, high]: a huge value (past SQLite's and NumPy's 64-bit integers)
    or a negative seed is a one-line usage error naming ``flag``, never an OverflowError or a spec's error."""

    def parse(text: str | int) -> int:
        try:
            value = int(text)
        except ValueError:
            raise UsageError(f"{flag} {str(text)[:40]!r}: give a whole number from {low} to {high:,}") from None
        if not low <= value <= high:
            raise UsageError(f"{flag} {str(text)[:40]!r}: give a whole number from {low} to {high:,}")
        return value

    return parse


MAX_SEED = 1_000_000
"""The largest --seed: a tuning run's gate seeds are ``seed * 1000 + i + 1``, which stay under 2^32, the most NumPy's
legacy ``RandomState`` (which specs may call) accepts."""
MAX_COUNT = 1_000_000_000
"""The largest count an option such as --limit or --top takes."""


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


def store_failure(exc: sqlite3.DatabaseError) -> str:
    """The one line for a store that failed mid-command: a full disk (the store keeps every finished write), or
    a damaged file (what to do with it)."""
    where = OPENED_STORES[-1] if OPENED_STORES else "the store"
    if "full" in str(exc):
        return (
            f"the disk holding {where} is full ({exc}): finished candidates are kept; free space, then resume "
            "with `kerntune tune --resume TUNING_RUN`"
        )
    return (
        f"the store {where} is damaged ({exc}): move it aside and start a fresh store (`sqlite3 FILE .recover` "
        "may rescue its rows), or give another --store"
    )


class Terminated(KeyboardInterrupt):
    """SIGTERM (the web page's Stop, a service manager) in the main thread: handled as Ctrl-C is, so a tuning
    run is marked interrupted and can be resumed."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises ``Terminated`` in the main thread (elsewhere nothing changes: only the main
    thread may set a handler)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
