"""The live path: what a production program imports. Standard library and kerntune's model only."""

from kerntune.runtime.autotune import TunableKernel, autotune

__all__ = ["TunableKernel", "autotune"]
