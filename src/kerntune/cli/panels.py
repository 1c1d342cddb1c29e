"""How ``kerntune --help`` reads: the verbs grouped in panels by the loop, in the loop's order, and the old names
kept for one release as hidden aliases that say which command replaced them."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec

import typer
from typer import _click as click  # typer vendors its own click: the standalone package's types are not its
from typer.core import TyperGroup

MEASURE = "Measure and tune"
INSPECT = "Inspect"
DEPLOY = "Deploy and serve"
LAB = "Laboratory"
FRONT = "Front ends"
STORE = "Store"

# The loop, in order: what a program runs, what the device can do, tune, check a change, guard the floors; read
# what a tuning run found; ship it, serve it, prove it engaged; the lab; the front ends; tuning runs in and
# out of the store.
# The help lists panels in the order of their first verb here.
LOOP_ORDER = (
    "scope",
    "calibrate",
    "tune",
    "ab",
    "floor",
    "history",
    "show",
    "report",
    "roofline",
    "profile",
    "inspect",
    "ledger",
    "deploy",
    "train",
    "run",
    "verify",
    "admit",
    "migrate",
    "lab",
    "web",
    "mcp",
    "import-kt",
    "export-kt",
)

P = ParamSpec("P")


class LoopGroup(TyperGroup):
    """A command group that lists its verbs in ``LOOP_ORDER`` (click sorts them by name, typer by import order),
    a verb missing from it last in registration order, each by its help's first paragraph on joined lines (the
    rich help keeps a docstring's line breaks, which wrap raggedly in a listing)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = list(self.commands)
        return sorted(names, key=lambda n: LOOP_ORDER.index(n) if n in LOOP_ORDER else len(LOOP_ORDER))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is not None and found.short_help is None and found.help:
            found.short_help = " ".join(found.help.strip().split("\n\n")[0].split())
        return found


def deprecation(old: str, new: str) -> None:
    """One stderr line: the old spelling still works this release, and what replaces it."""
    sys.stderr.write(f"kerntune: `{old}` is deprecated and goes in the next release; use `{new}`\n")


def deprecated_alias(
    group: typer.Typer,
    old: str,
    new: str,
    command: Callable[P, None],
    context_settings: dict[str, bool] | None = None,
) -> Callable[P, None]:
    """Register ``command`` on ``group`` again under its old name ``old``, hidden from the help: it prints the
    deprecation line naming ``new`` (the full command, e.g. ``kerntune web``), then does the same thing."""

    @functools.wraps(command)
    def alias(*args: P.args, **kwargs: P.kwargs) -> None:
        deprecation(f"kerntune {old}", new)
        command(*args, **kwargs)

    group.command(old, hidden=True, context_settings=context_settings)(alias)
    return alias
