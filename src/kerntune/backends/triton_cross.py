"""Cross-compile a Triton kernel for a named target on any machine (Triton's compiler, and NVIDIA's ptxas,
cuobjdump and nvdisasm, ship in the triton wheel; AMD code objects need nothing more), then read the
binary (``backends.cubin`` for NVIDIA): resources, an instruction census and the occupancy they allow.

No GPU is used or needed: this is how a CPU machine sees what a config becomes on an H200 or an MI300.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kerntune.backends.base import fail
from kerntune.backends.cubin import Inspection, inspect_cubin
from kerntune.backends.hsaco import inspect_amdgcn
from kerntune.backends.triton_types import JitFunction
from kerntune.errors import BackendUnavailable, UsageError
from kerntune.isa.targets import TARGETS

try:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailable("cross-compiling needs triton: pip install 'kerntune[triton]'") from exc


def gpu_target(name: str) -> object:
    if name not in TARGETS:
        raise UsageError(f"unknown target {name!r}: choose one of {', '.join(TARGETS)}")
    return GPUTarget(*TARGETS[name])


def cross_compile(
    fn: JitFunction,
    signature: Mapping[str, str],
    constexprs: Mapping[str, object],
    target: str,
    options: Mapping[str, object],
) -> object:
    """Compile ``fn`` for ``target`` (a name in TARGETS) with Triton's options (num_warps, num_stages, ...).
    ``signature`` maps every argument to a Triton type (``*bf16``, ``i32``, ``constexpr``)."""
    return cross_compile_source(fn, signature, constexprs, {}, target, options)


def cross_compile_source(
    fn: JitFunction,
    signature: Mapping[str, str],
    constexprs: Mapping[str, object],
    attrs: Mapping[tuple[int, ...], list[list[object]]],
    target: str,
    options: Mapping[str, object],
) -> object:
    """``cross_compile`` with specialization attributes (``{(arg index,): [["tt.divisibility", 16]]}``)."""
    gpu = gpu_target(target)
    if getattr(fn, "is_gluon", lambda: False)():  # a Gluon kernel is lowered from its own source form
        from triton.experimental.gluon._runtime import GluonASTSource

        source = GluonASTSource(fn, dict(signature), constexprs=dict(constexprs), attrs=dict(attrs))
    else:
        source = ASTSource(fn=fn, signature=dict(signature), constexprs=dict(constexprs), attrs=dict(attrs))
    # FP fusion stated, not left to a default that Triton 3.10 changes (3.9 warns when it is left unset).
    options = {"enable_fp_fusion": True, **options}
    try:
        return triton.compile(source, target=gpu, options=options)
    except UsageError:
        raise
    except Exception as exc:
        raise fail(exc, f"compile for {target}") from exc


def inspect_compiled(kernel: Any, target: str) -> Inspection:
    """Resources, census and occupancy of a kernel compiled for ``target``."""
    metadata = kernel.metadata
    warps = int(getattr(metadata, "num_warps", 4))
    shared = int(getattr(metadata, "shared", 0) or 0)  # Triton's dynamic shared memory / LDS, per block
    if TARGETS[target][0] == "cuda":
        return inspect_cubin(kernel.asm["cubin"], target, shared, warps * 32)
    return inspect_amdgcn(kernel.asm["amdgcn"], target, total_lds=shared, waves=warps)
