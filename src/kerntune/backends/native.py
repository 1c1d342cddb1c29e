"""What the CUDA C++ and HIP compilers share: the macros a config becomes, the on-disk binary cache, the
compiler log in a failure reason, the block size.

The cache is keyed by everything that changes the binary (source, macros, template instance, options, arch and
the compiler's identity and release), so a compile-ahead worker's compile serves the timing worker and a
compiler upgrade never serves an old binary. A binary is written before the JSON entry that marks it complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kerntune.backends.base import digest
from kerntune.errors import CandidateFailed
from kerntune.model import FailureKind, Meta, NativeKernel
from kerntune.settings import Settings

LOG_LINES = 60


@dataclass(frozen=True)
class NativeBinary:
    code: bytes
    """A cubin (NVIDIA), or an AMD code object or clang offload bundle (what hipModuleLoadData takes)."""
    symbol: str
    """The kernel's name in the binary (mangled for a template instance)."""
    name_expression: str
    """How the kernel is asked for: its name, or the template instance (``tile_matmul<16, 4>``)."""
    arch: str
    compile_s: float
    compiler: str

    @property
    def hash(self) -> str:
        return digest(self.code)


def macros(meta: Meta, template: str | None = None) -> list[tuple[str, str]]:
    """The macros: every scalar value, except those a template instance takes as arguments (a macro of the
    same name would rewrite the template's parameter)."""
    in_template = {f for _, f, _, _ in string.Formatter().parse(template or "") if f}
    return [
        (name, str(int(v) if isinstance(v, bool) else v))
        for name, v in meta.items()
        if isinstance(v, (bool, int, float, str)) and name.isidentifier() and name not in in_template
    ]


def cache_dir() -> Path:
    configured = Settings.from_env().binary_cache
    return Path(configured) if configured else Path.home() / ".cache" / "kerntune" / "binaries"


def cache_load(key: str) -> tuple[bytes, dict[str, Any]] | None:
    """The binary and its entry under ``key``, or None when absent or incomplete."""
    with contextlib.suppress(OSError, ValueError):
        entry = json.loads((cache_dir() / f"{key}.json").read_text())
        return (cache_dir() / f"{key}.bin").read_bytes(), entry
    return None


def cache_store(key: str, binary: bytes, entry: dict[str, Any]) -> None:
    """Best effort: a cache that cannot be written only costs a compile later."""
    with contextlib.suppress(OSError):
        cache_dir().mkdir(parents=True, exist_ok=True)
        (cache_dir() / f"{key}.bin").write_bytes(binary)  # the binary first: the .json marks it complete
        (cache_dir() / f"{key}.json").write_text(json.dumps(entry))


def tool_identity(kind: str, path: str) -> str:
    """An offline compiler's identity for the cache key: which binary, and when it was installed."""
    real = os.path.realpath(path)
    return f"{kind}:{real}:{os.stat(real).st_mtime_ns}"


def compiler_log(text: str) -> str:
    """A compiler's log for a failure reason: its first LOG_LINES lines (the first errors are the ones that
    matter; one bad macro can cascade into hundreds), and how many more there were."""
    lines = text.replace("\x00", "").strip().splitlines()
    if len(lines) <= LOG_LINES:
        return "\n".join(lines)
    return "\n".join([*lines[:LOG_LINES], f"... ({len(lines) - LOG_LINES} more lines of the log)"])


def threads(kernel: NativeKernel, meta: Meta) -> int:
    total = 1
    for d in kernel.block(meta):
        total *= int(d)
    return total


def launch_scalar(name: str, value: object) -> Any:
    """A plain Python scalar as a kernel receives it, a numpy scalar: bool and int as int32 (refused beyond int32: give
    ``np.int64(n)``), float as float32; numpy scalars are passed as they are by the backends."""
    if isinstance(value, bool):
        return np.int32(int(value))
    if isinstance(value, int):
        if not -(2**31) <= value < 2**31:
            raise CandidateFailed(
                FailureKind.LAUNCH.value,
                f"argument {name}={value} does not fit int32: give np.int64(...) in make_inputs",
            )
        return np.int32(value)
    if isinstance(value, float):
        return np.float32(value)
    raise CandidateFailed(
        FailureKind.LAUNCH.value,
        f"argument {name!r} is a {type(value).__name__}: pass tensors, numpy scalars, ints or floats",
    )
