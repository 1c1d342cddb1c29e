"""Capture a Triton kernel that ``torch.compile`` generated: Inductor launches its kernels through
``CachingAutotuner.run`` and its own launchers, never through ``JITFunction.run``, so the lab hooks that method.

The launch is recorded as a plain Triton launch the lab replays (``fn[grid](**arguments)``): every argument by
name (the kernel's non-constexpr parameters, as Inductor passes them), the constexprs of the config Inductor chose
(``XBLOCK``, ``R0_BLOCK``... and the ones it specialised), ``num_warps`` and ``num_stages`` as launch options, and
the grid Inductor computes for that config (``CachingAutotuner._interpret_args_grid``, the grid its interpreter path
launches). The generated module is copied into the capture (``inductor_kernel.py``), so a replay does not depend on
Inductor's cache and a variant can start from the generated source. A ``--set`` variant (``XBLOCK=1024``) runs on the
grid Inductor's own grid expression gives for its block sizes (``regrid``), as Inductor would launch that config.

Inductor's internals are not a public interface: read here as torch 2.7 to 2.13 name them (torch 2.11 on the H200,
2.13 in CI); a torch without them gets a clear refusal, never a broken program.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerntune.errors import UsageError
from kerntune.lab.manifest import InductorRecord, KernelIdentity, Manifest, ScalarOption

if TYPE_CHECKING:
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

GENERATED = "inductor_kernel.py"


def autotuner_class() -> type[CachingAutotuner] | None:
    """Inductor's ``CachingAutotuner`` class, or None when this torch has none (or no Triton)."""
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:
        return None
    return CachingAutotuner if hasattr(CachingAutotuner, "_interpret_args_grid") else None


def kernel_name(autotuner: object) -> str:
    return str(getattr(getattr(autotuner, "fn", None), "__name__", ""))


def arguments(autotuner: Any, args: tuple[object, ...]) -> dict[str, object]:
    """The launch's arguments by the kernel's parameter names: Inductor passes the non-constexpr parameters in
    order, then its extra launcher arguments (grid helpers), which the kernel itself never receives."""
    extra = len(autotuner.inductor_meta.get("extra_launcher_args", ()) or ())
    names = [p.name for p in autotuner.fn.params if not p.is_constexpr]
    passed = args[: len(args) - extra] if extra else args
    if len(passed) != len(names):
        raise ValueError(
            f"{kernel_name(autotuner)} was launched with {len(passed)} arguments for the parameters "
            f"{names}: this Inductor passes its kernels' arguments another way"
        )
    return dict(zip(names, passed, strict=True))


def chosen(
    autotuner: Any, args: tuple[object, ...]
) -> tuple[dict[str, ScalarOption], dict[str, ScalarOption], list[int], InductorRecord]:
    """After a launch: the constexprs, launch options, grid and description of the config Inductor ran."""
    launchers = getattr(autotuner, "launchers", None) or []
    # Once its launchers are built Inductor drops its config list (``configs = None``): count what is left.
    candidates = autotuner.configs or getattr(autotuner, "compile_results", None) or launchers
    config = launchers[0].config if launchers else autotuner.configs[0]
    _, grid = autotuner._interpret_args_grid(args, config)
    params = {p.name for p in autotuner.fn.params if p.is_constexpr}
    constants = {
        str(k): v
        for k, v in (autotuner.triton_meta.get("constants") or {}).items()
        if str(k) in params and (v is None or isinstance(v, (bool, int, float, str)))
    }
    constexprs = {**constants, **{k: v for k, v in config.kwargs.items() if k in params}}
    options: dict[str, ScalarOption] = {"num_warps": int(config.num_warps), "num_stages": int(config.num_stages)}
    about: InductorRecord = {
        "kernel_name": kernel_name(autotuner),
        "config": dict(config.kwargs),
        "configs": len(candidates),
        "autotuned": len(candidates) > 1,
    }
    return constexprs, options, [int(g) for g in grid], about


def live_function(autotuner: Any) -> object:
    """The kernel's JITFunction with its Python function: Inductor compiles in worker processes and, to pickle the
    autotuner back, drops ``fn.fn``; its ``_reload_kernel`` (where this torch keeps one) loads the generated module
    again."""
    fn = autotuner.fn
    reload = getattr(autotuner, "_reload_kernel", None)
    if getattr(fn, "fn", None) is None and callable(reload):
        fn = reload().fn
    filename = str(getattr(autotuner, "filename", "") or "")
    if getattr(fn, "fn", None) is None and filename.endswith(".py") and Path(filename).is_file():
        import importlib.util  # the generated module again: decorating its kernel compiles nothing

        found = importlib.util.spec_from_file_location(f"kerntune_inductor_{Path(filename).stem}", filename)
        if found is not None and found.loader is not None:
            module = importlib.util.module_from_spec(found)
            found.loader.exec_module(module)
            fn = jit_function(getattr(module, kernel_name(autotuner), None))
    if getattr(fn, "fn", None) is None:
        raise ValueError(
            f"{kernel_name(autotuner)}: Inductor compiled it in a worker and kept no Python function "
            "to read its source from (no _reload_kernel, no generated file)"
        )
    return fn


def _whole(value: object) -> int:
    if not isinstance(value, (int, float, str)):
        raise UsageError(f"the manifest's launch option {value!r} is not a number: capture the launch again")
    return int(value)


def keep_source(identity: KernelIdentity, out: Path) -> KernelIdentity:
    """The kernel identity pointing at a copy of the generated module inside the capture folder."""
    copy = out / GENERATED
    shutil.copyfile(identity["file"] or "", copy)
    return {
        **identity,
        "generated_file": identity["file"],
        "file": str(copy.resolve()),
        "file_sha256": hashlib.sha256(copy.read_bytes()).hexdigest(),
    }


def jit_function(loaded: object) -> object:
    """The JITFunction under what a generated module binds the kernel's name to (a CachingAutotuner)."""
    inner = getattr(loaded, "fn", None)
    return inner if inner is not None and hasattr(loaded, "configs") and hasattr(inner, "arg_names") else loaded


def regrid(folder: Path, manifest: Manifest) -> list[int]:
    """The grid Inductor launches the captured kernel with at the manifest's constexprs (a ``--set`` variant): its
    grid expression evaluated again on the captured sizes. Hazard guarded: a block size changed on the captured grid
    leaves elements unwritten (a smaller block) or, where Inductor dropped the mask because its block divides the
    size, writes past the tensors (a larger one)."""
    import importlib.util

    import triton

    from kerntune.errors import UsageError

    path = folder / GENERATED
    found = importlib.util.spec_from_file_location(f"kerntune_regrid_{folder.name.replace('-', '_')}", path)
    if found is None or found.loader is None or not path.is_file():
        raise UsageError(f"{path} is missing: the capture keeps no generated module to size a variant's grid")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    autotuner = getattr(module, manifest["kernel"]["name"], None)
    if autotuner is None or not hasattr(autotuner, "_interpret_args_grid"):
        raise UsageError(f"{path} binds no Inductor autotuner to {manifest['kernel']['name']!r}")
    if autotuner.inductor_meta.get("extra_launcher_args"):
        raise UsageError(
            "this kernel's grid comes from launcher arguments the capture does not keep: compare a "
            "variant at the captured block sizes"
        )
    arguments = manifest["arguments"]
    args = tuple(
        arguments[p.name].get("value") if arguments[p.name]["kind"] == "scalar" else None
        for p in autotuner.fn.params
        if not p.is_constexpr
    )
    kwargs = {name: arguments[name]["value"] for name in manifest["inductor"]["config"] if name in arguments}
    config = triton.Config(
        kwargs, num_warps=_whole(manifest["options"]["num_warps"]), num_stages=_whole(manifest["options"]["num_stages"])
    )
    _, grid = autotuner._interpret_args_grid(args, config)
    return [int(g) for g in grid]
