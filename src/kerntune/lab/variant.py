"""What a variant of a captured kernel must keep, whatever its language: the captured kernel's name and argument
names (a replay binds the captured arguments by name); and, for a kernel whose source is a string in a program
file (OpenCL, CUDA C++, HIP), which file holds it."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from kerntune.errors import UsageError
from kerntune.lab.manifest import KernelIdentity, Manifest


def require_signature(identity: KernelIdentity, names: list[str], variant: Path) -> None:
    """A variant keeps the captured kernel's name and argument names; another signature is refused."""
    if names != identity["arg_names"]:
        raise UsageError(
            f"{variant}: {identity['name']}({', '.join(names)}) has another signature than the captured "
            f"({', '.join(identity['arg_names'] or [])}): a variant keeps the arguments"
        )


def source_file(source: str) -> tuple[str | None, str | None]:
    """The loaded module file holding ``source`` exactly once, and its SHA-256 (None when none does)."""
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or not str(path).endswith(".py"):
            continue
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if text.count(source) == 1:
            return str(Path(path).resolve()), hashlib.sha256(text.encode()).hexdigest()
    return None, None


def source_text(manifest: Manifest, variant: Path | None) -> str:
    """A source-string kernel's text (OpenCL, CUDA C++, HIP): the captured one, or the variant file's; a file that
    cannot be read is refused. Each language checks the variant's signature against the captured kernel's."""
    if variant is None:
        return str(manifest["kernel"]["source"])
    try:
        return Path(variant).read_text()
    except OSError as exc:
        raise UsageError(f"{variant} cannot be read ({exc})") from None
