"""The live path: what a production program imports. Standard library and kerntune's model only."""

from kerntune.runtime.autotune import TunableKernel, autotune
from kerntune.runtime.dispatch import Dispatcher
from kerntune.runtime.keys import kernel_hash, torch_device_fields
from kerntune.runtime.table import Table, load_table

__all__ = ["Dispatcher", "Table", "TunableKernel", "autotune", "kernel_hash", "load_table", "torch_device_fields"]
