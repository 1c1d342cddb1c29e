"""Loading a spec file: ``examples/<name>/spec.py`` (or any file) that defines ``problem``.

Every way a spec can be wrong ends in a SpecError whose one line names the file, the problem and the fix.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

from kerntune.errors import BackendUnavailable, KerntuneError, SpecError
from kerntune.model import (
    CudaKernel,
    HipKernel,
    Kernel,
    NativeKernel,
    OpenCLKernel,
    Problem,
    TritonKernel,
    VulkanKernel,
)

_HEAVY = {"torch": "triton", "triton": "triton", "pyopencl": "opencl", "cuda": "cuda", "hip": "hip", "vulkan": "vulkan"}


@dataclass(frozen=True)
class LoadedSpec:
    path: Path
    problem: Problem
    digest: str
    """Hash of the spec file and its kernel source: a resumed run refuses a spec that changed."""


def resolve_spec_path(path: str | Path) -> Path:
    candidate = Path(path)
    if not candidate.exists():
        raise SpecError(f"spec path {str(path)!r} does not exist: give a spec file or a folder holding spec.py")
    if candidate.is_dir():
        candidate = candidate / "spec.py"
        if not candidate.is_file():
            raise SpecError(f"folder {str(path)!r} holds no spec.py: give the spec file itself or add spec.py")
    return candidate.resolve()


def _where(exc: BaseException, path: Path) -> str:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == path:
            return f"{path.name}:{frame.lineno}"
    return path.name


def load_spec(path: str | Path) -> LoadedSpec:
    """Import the spec file as a fresh module and return its ``problem`` (or ``PROBLEM``)."""
    spec_path = resolve_spec_path(path)
    source = spec_path.read_bytes()
    try:
        compile(source, str(spec_path), "exec")
    except SyntaxError as exc:
        raise SpecError(f"{spec_path}:{exc.lineno}: syntax error: {exc.msg}; fix the spec file and run again") from None
    module_name = f"kerntune_spec_{hashlib.md5(str(spec_path).encode()).hexdigest()[:12]}"
    module_spec = importlib.util.spec_from_file_location(module_name, spec_path)
    if module_spec is None or module_spec.loader is None:
        raise SpecError(f"cannot load {spec_path} as Python: give a .py spec file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    sys.path.insert(0, str(spec_path.parent))
    try:
        module_spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        extra = _HEAVY.get(root)
        hint = f"pip install 'kerntune[{extra}]'" if extra else f"install the {root!r} package"
        raise BackendUnavailable(f"{spec_path.name} needs the module {root!r}, not installed: {hint}") from None
    except KerntuneError as exc:
        raise SpecError(f"{_where(exc, spec_path)}: {exc}") from None
    except SystemExit as exc:  # a spec is imported, never run as a program: its exit would end kerntune silently
        raise SpecError(
            f"{spec_path}: the spec called sys.exit({exc.code!r}) while loading; a spec defines "
            "`problem` and must not exit (guard script code with `if __name__ == '__main__':`)"
        ) from None
    except Exception as exc:
        raise SpecError(
            f"{_where(exc, spec_path)}: loading the spec raised {type(exc).__name__}: {exc}; fix the spec file"
        ) from None
    finally:
        sys.path.remove(str(spec_path.parent))
    problem = getattr(module, "problem", None) or getattr(module, "PROBLEM", None)
    if not isinstance(problem, Problem):
        raise SpecError(f"{spec_path} defines no `problem = kerntune.Problem(...)`: add one at module level")
    return LoadedSpec(spec_path, problem, _digest(source, problem))


def _digest(source: bytes, problem: Problem) -> str:
    h = hashlib.sha256(source)
    kernel = problem.kernel
    if isinstance(kernel, (OpenCLKernel, NativeKernel)):
        h.update(kernel.source.encode())
    elif isinstance(kernel, VulkanKernel):
        h.update(kernel.source if isinstance(kernel.source, bytes) else kernel.source.encode())
    elif isinstance(kernel, TritonKernel):
        fn = getattr(kernel.fn, "fn", kernel.fn)
        try:
            h.update(inspect.getsource(fn).encode())
        except (OSError, TypeError):
            h.update(repr(fn).encode())
    return h.hexdigest()[:16]


def with_kernel_source(loaded: LoadedSpec, source_path: str | Path) -> LoadedSpec:
    """The spec with its kernel's source taken from another file (an A/B of two kernel sources).

    OpenCL, CUDA C++, HIP and Vulkan: the file is the kernel source (GLSL, or SPIR-V for a Vulkan shader).
    Triton: the file is a Python module defining a ``@triton.jit``
    function of the same name as the spec's kernel. The digest covers the new source.
    """
    path = Path(source_path)
    if not path.is_file():
        raise SpecError(f"kernel source {str(path)!r} does not exist")
    kernel = loaded.problem.kernel
    text = path.read_bytes()
    new_kernel: Kernel
    if isinstance(kernel, (OpenCLKernel, CudaKernel, HipKernel)):
        new_kernel = replace(kernel, source=text.decode())
    elif isinstance(kernel, VulkanKernel):  # GLSL text, or SPIR-V (a .spv file: its magic number says so)
        new_kernel = replace(
            kernel, source=text if text[:4] in (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03") else text.decode()
        )
    elif isinstance(kernel, TritonKernel):
        name = getattr(getattr(kernel.fn, "fn", kernel.fn), "__name__", "")
        module = _import_file(path, f"kerntune_source_{hashlib.md5(text).hexdigest()[:12]}")
        fn = getattr(module, name, None)
        if fn is None:
            raise SpecError(f"{path} defines no kernel named {name!r} (the spec's kernel): name it the same")
        new_kernel = replace(kernel, fn=fn)
    else:
        raise SpecError(f"a {loaded.problem.language} kernel has no source file to swap: A/B two specs instead")
    problem = replace(loaded.problem, kernel=new_kernel)
    digest = hashlib.sha256(loaded.digest.encode() + text).hexdigest()[:16]
    return LoadedSpec(loaded.path, problem, digest)


def _import_file(path: Path, module_name: str) -> ModuleType:
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise SpecError(f"cannot load {path} as Python")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise SpecError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from None
    return module
