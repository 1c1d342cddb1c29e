"""The live path: what a production program imports. Standard library and kerntune's model only; ``serve`` imports
torch when it is called (it overrides torch operators), never at import."""

from kerntune.runtime.autotune import TunableKernel, autotune
from kerntune.runtime.dispatch import Dispatcher
from kerntune.runtime.keys import kernel_hash, torch_device_fields
from kerntune.runtime.serving import Serving, serve
from kerntune.runtime.table import Table, load_table

__all__ = [
    "Dispatcher",
    "Serving",
    "Table",
    "TunableKernel",
    "autotune",
    "kernel_hash",
    "load_table",
    "serve",
    "torch_device_fields",
]
