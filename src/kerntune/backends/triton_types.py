"""What kerntune reads of Triton's objects (Triton ships no type information): a ``@triton.jit`` function."""

from __future__ import annotations

from typing import Protocol


class JitFunction(Protocol):
    """A ``@triton.jit`` function: its name and its arguments' names, in order."""

    __name__: str
    arg_names: list[str]
