"""Capture a Triton kernel that ``torch.compile`` generated: Inductor launches its kernels through
``CachingAutotuner.run`` and its own launchers, never through ``JITFunction.run``, so the lab hooks that method.

The launch is recorded as a plain Triton launch the lab replays (``fn[grid](**arguments)``): every argument by
name (the kernel's non-constexpr parameters, as Inductor passes them), the constexprs of the config Inductor chose
(``XBLOCK``, ``R0_BLOCK``... and the ones it specialised), ``num_warps`` and ``num_stages`` as launch options, and
the grid Inductor computes for that config (``CachingAutotuner._interpret_args_grid``, the grid its interpreter path
launches). The generated module is copied into the capture (``inductor_kernel.py``), so a replay does not depend on
Inductor's cache and a variant can start from the generated source. A ``--set`` variant (``XBLOCK=1024``) runs on the
captured grid: a smaller block than Inductor's leaves elements unwritten, which validation reports.

Inductor's internals are not a public interface: read here as torch 2.7 to 2.13 name them (torch 2.11 on the H200,
2.13 in CI); a torch without them gets a clear refusal, never a broken program.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

GENERATED = "inductor_kernel.py"


def autotuner_class() -> Any:
    """Inductor's ``CachingAutotuner`` class, or None when this torch has none (or no Triton)."""
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:
        return None
    return CachingAutotuner if hasattr(CachingAutotuner, "_interpret_args_grid") else None


def kernel_name(autotuner: Any) -> str:
    return str(getattr(getattr(autotuner, "fn", None), "__name__", ""))


def arguments(autotuner: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """The launch's arguments by the kernel's parameter names: Inductor passes the non-constexpr parameters in
    order, then its extra launcher arguments (grid helpers), which the kernel itself never receives."""
    extra = len(autotuner.inductor_meta.get("extra_launcher_args", ()) or ())
    names = [p.name for p in autotuner.fn.params if not p.is_constexpr]
    passed = args[: len(args) - extra] if extra else args
    if len(passed) != len(names):
        raise ValueError(f"{kernel_name(autotuner)} was launched with {len(passed)} arguments for the parameters "
                         f"{names}: this Inductor passes its kernels' arguments another way")
    return dict(zip(names, passed, strict=True))


def chosen(autotuner: Any, args: tuple[Any, ...]) -> tuple[dict[str, Any], dict[str, Any], list[int], dict[str, Any]]:
    """After a launch: the constexprs, launch options, grid and description of the config Inductor ran."""
    launchers = getattr(autotuner, "launchers", None) or []
    config = launchers[0].config if launchers else autotuner.configs[0]
    _, grid = autotuner._interpret_args_grid(args, config)
    params = {p.name for p in autotuner.fn.params if p.is_constexpr}
    constants = {str(k): v for k, v in (autotuner.triton_meta.get("constants") or {}).items()
                 if str(k) in params and (v is None or isinstance(v, (bool, int, float, str)))}
    constexprs = {**constants, **{k: v for k, v in config.kwargs.items() if k in params}}
    options = {"num_warps": int(config.num_warps), "num_stages": int(config.num_stages)}
    about = {"kernel_name": kernel_name(autotuner), "config": dict(config.kwargs), "configs": len(autotuner.configs),
             "autotuned": len(autotuner.configs) > 1}
    return constexprs, options, [int(g) for g in grid], about


def keep_source(identity: dict[str, Any], out: Path) -> dict[str, Any]:
    """The kernel identity pointing at a copy of the generated module inside the capture folder."""
    copy = out / GENERATED
    shutil.copyfile(identity["file"], copy)
    return {**identity, "generated_file": identity["file"], "file": str(copy.resolve()),
            "file_sha256": hashlib.sha256(copy.read_bytes()).hexdigest()}


def jit_function(loaded: Any) -> Any:
    """The JITFunction under what a generated module binds the kernel's name to (a CachingAutotuner)."""
    inner = getattr(loaded, "fn", None)
    return inner if inner is not None and hasattr(loaded, "configs") and hasattr(inner, "arg_names") else loaded
