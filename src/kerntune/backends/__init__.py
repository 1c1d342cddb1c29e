"""One module per kernel language. ``load_backend`` imports the one a problem needs, in the worker only."""

from __future__ import annotations

import importlib

from kerntune.backends.base import Backend
from kerntune.errors import BackendUnavailable

_MODULES = {
    "opencl": ("kerntune.backends.opencl", "OpenCLBackend"),
    "cuda": ("kerntune.backends.cuda", "CudaBackend"),
    "hip": ("kerntune.backends.hip", "HipBackend"),
    "triton": ("kerntune.backends.triton", "TritonBackend"),
    "torch": ("kerntune.backends.torch", "TorchBackend"),
    "vulkan": ("kerntune.backends.vulkan", "VulkanBackend"),
}


def load_backend(language: str, device: str = "") -> Backend:
    """The backend for ``language`` on ``device`` (empty: the default device)."""
    if language not in _MODULES:
        known = ", ".join(sorted(_MODULES))
        raise BackendUnavailable(f"no backend for kernel language {language!r}; kerntune has: {known}")
    module_name, class_name = _MODULES[language]
    module = importlib.import_module(module_name)
    backend: Backend = getattr(module, class_name)(device)
    return backend


__all__ = ["Backend", "load_backend"]
