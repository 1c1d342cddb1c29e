"""The kernel laboratory: capture one real launch (``capture``), replay it in isolation (``replay``), compare and
save variants (``session``). See docs/architecture.md."""

from kerntune.lab.capture import capture

__all__ = ["capture"]
