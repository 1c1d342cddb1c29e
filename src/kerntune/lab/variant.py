"""What a variant of a captured kernel must keep, whatever its language: the captured kernel's name and argument
names (a replay binds the captured arguments by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerntune.errors import UsageError


def require_signature(identity: dict[str, Any], names: list[str], variant: Path) -> None:
    """A variant keeps the captured kernel's name and argument names; another signature is refused."""
    if names != identity["arg_names"]:
        raise UsageError(f"{variant}: {identity['name']}({', '.join(names)}) has another signature than the captured "
                         f"({', '.join(identity['arg_names'])}): a variant keeps the arguments")
