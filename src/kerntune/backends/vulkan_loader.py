"""Why the Vulkan loader found no driver, in words: the loader itself says only ``VkErrorIncompatibleDriver``.

A driver is an ICD file (JSON naming a shared library) in the loader's search folders, or the files that
``VK_DRIVER_FILES`` (``VK_ICD_FILENAMES`` before it) names. Each file found is opened and its library loaded the way
the loader would (a bare name through the dynamic linker's path, a relative path from the file's folder), and
the first reason each one fails is kept: a library the linker cannot find, a missing dependency, a broken file.
NVIDIA's container toolkit, for one, installs an ICD file naming ``libGLX_nvidia.so.0`` whose folder
(``/usr/local/nvidia/lib64``) is outside the linker's path and which needs glvnd's ``libGLdispatch.so.0``."""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

SEARCH = ("/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/usr/share/vulkan/icd.d")
# Not searched by the loader, but where container toolkits put a driver's ICD file: named in the advice.
ELSEWHERE = ("/usr/local/nvidia/share/vulkan/icd.d",)


def icd_files() -> tuple[list[Path], str]:
    """The ICD files the loader reads, and where that list came from."""
    for variable in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES"):
        named = os.environ.get(variable, "")
        if named:
            files: list[Path] = []
            for part in filter(None, named.split(os.pathsep)):
                path = Path(part)
                files += sorted(path.glob("*.json")) if path.is_dir() else [path]
            return files, variable
    data_dirs = os.environ.get("XDG_DATA_DIRS", "").split(os.pathsep)
    folders = [*SEARCH, *(f"{d.rstrip('/')}/vulkan/icd.d" for d in data_dirs if d)]
    return [f for folder in dict.fromkeys(folders) for f in sorted(Path(folder).glob("*.json"))], "the loader's folders"


def library_problem(icd: Path) -> str | None:
    """None when the ICD file's library loads, else what stops it."""
    try:
        library = str(json.loads(icd.read_text())["ICD"]["library_path"])
    except FileNotFoundError:
        return "no such file"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"not an ICD file ({type(exc).__name__}: {exc})"
    if "/" in library and not library.startswith("/"):
        library = str(icd.parent / library)
    try:
        ctypes.CDLL(library)
    except OSError as exc:  # the linker's message names the library it could not load
        return str(exc) if library in str(exc) else f"{library}: {exc}"
    return None


def why_no_driver() -> str:
    """A sentence for the user: each ICD file and why its driver did not load, and what to do."""
    files, source = icd_files()
    if not files:
        hint = [str(f) for folder in ELSEWHERE for f in sorted(Path(folder).glob("*.json"))]
        return (
            "no Vulkan driver (ICD) file in "
            + source
            + ("; one lies in " + ", ".join(hint) + ": point VK_DRIVER_FILES at it" if hint else "")
            + "; apt-get install mesa-vulkan-drivers for lavapipe (CPU)"
        )
    reasons = [
        f"{f.name}: {library_problem(f) or 'its library loads (the driver refused the instance)'}" for f in files
    ]
    return (
        f"the Vulkan driver files from {source} do not give an instance — "
        + "; ".join(reasons)
        + ". Put the driver's folder (and its dependencies, e.g. glvnd's libGLdispatch) on LD_LIBRARY_PATH, or "
        "apt-get install mesa-vulkan-drivers for lavapipe (CPU)"
    )
