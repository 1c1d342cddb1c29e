"""Launch an already compiled Triton kernel without the JIT's per-call work: what a served key pays on every hit.

``fn[grid](*args, **constexprs)`` redoes on each call what is fixed once a key's first call has compiled its
kernel: binding the arguments to the signature, the specialization key (each pointer's alignment, each integer's
divisibility), the kernel-cache lookup and the check that the globals the kernel read have not changed. On the
H200's host that is most of a served GEMM's host time (benchmarks/served-model/serve_cost.py). ``direct_launcher``
keeps the compiled kernel, its grid and its launcher, and calls the launcher the way ``JITFunction.run`` does — on the
stream current when called, with the launch hooks a profiler may have installed.

The hazard the JIT's per-call work guards against is the caller's to own: the binary is specialized on the
arguments of the call that compiled it (16-byte alignment of each pointer; integers equal to 1 or divisible by
16; the constexpr values), so a direct launch is right only for arguments that specialize the same way — a caller
fixes the integers and constexprs per key and checks alignment and strides before each launch, or launches
through the JIT. While serving's native gate records (``kerntune.runtime.launch_plan``), each launch is
recorded too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import kerntune.runtime.launch_plan as launch_plan


def direct_launcher(compiled: Any, grid: Sequence[int]) -> Callable[..., None] | None:
    """A launcher of ``compiled`` (the ``CompiledKernel`` that ``fn[grid](...)`` or ``fn.warmup`` returned) over
    ``grid``: call it with every parameter of the kernel in signature order, constexprs included (as the JIT
    passes them). None where this Triton has no such path (before 3.4: no ``triton.knobs``; the interpreter,
    which returns no compiled kernel): the caller launches through the JIT."""
    try:
        from triton import knobs
        from triton.runtime import driver

        init = getattr(compiled, "_init_handles", None)
        if init is not None:
            init()  # loads the module: the function handle and the launcher exist from here on
        run, function, packed = compiled.run, compiled.function, compiled.packed_metadata
        active = driver.active
        current_device, current_stream = active.get_current_device, active.get_current_stream
        runtime = knobs.runtime
    except Exception:  # another Triton's internals, or no compiled kernel: the JIT path stays
        return None
    dims = (*grid, 1, 1)[:3]
    g0, g1, g2 = (int(d) for d in dims)
    map_types = _tensor_map_types()

    def launch(*args: object) -> None:
        recording = launch_plan.recording
        if recording is not None:  # serving's native gate is planning this call's form
            recording.append(launch_plan.DirectLaunch(compiled, (g0, g1, g2), args, map_types))
        stream = current_stream(current_device())
        enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
        # A profiler's enter hook reads the launch's metadata; built only when one is installed, as the JIT does.
        metadata = compiled.launch_metadata(dims, stream, *args) if enter is not None else None
        run(g0, g1, g2, stream, function, packed, metadata, enter, leave, *args)

    return launch


def _tensor_map_types() -> dict[int, int]:
    """Triton's TMA element types (a kernel's ``tensordesc_meta``) as the driver's ``CUtensorMapDataType``, which
    a launch plan's descriptors are encoded with; empty where this Triton has no such table (no plan then)."""
    try:
        from triton.backends.nvidia.driver import TMA_DTYPE_DEVICE_TO_HOST

        return {int(k): int(v) for k, v in TMA_DTYPE_DEVICE_TO_HOST.items()}
    except Exception:  # another backend or another Triton's driver module
        return {}
