"""The live path: what a production program imports. Standard library and kerntune's model only."""

from kerntune.runtime.autotune import TunableKernel, autotune
from kerntune.runtime.dispatch import Dispatcher
from kerntune.runtime.table import Table, load_table

__all__ = ["Dispatcher", "Table", "TunableKernel", "autotune", "load_table"]
