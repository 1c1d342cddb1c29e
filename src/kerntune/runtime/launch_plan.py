"""Launch plans: a served form's launch as the native gate repeats it from C++. Standard library only.

``kerntune.backends.triton_launch``'s direct launcher appends each launch here while ``recording`` is a list: the
native gate sets it around one served call, and ``plan_of`` turns the one launch that call made into a plan
(``native/served_gate.cpp`` launches it). Outside that call ``recording`` is None and a launch pays one attribute
read.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DirectLaunch:
    """One launch of a compiled kernel: the kernel (Triton's ``CompiledKernel``), its grid, and every parameter in
    signature order, constexprs included."""

    compiled: object
    grid: tuple[int, int, int]
    args: tuple[object, ...]


recording: list[DirectLaunch] | None = None


PlanArg = tuple[int, int, int]
"""(kind, value, size): INPUT (value: the call tensor's index), OUTPUT, or BYTES (value, in ``size`` bytes)."""
INPUT, OUTPUT, BYTES = 0, 1, 2
INT_BYTES = {"i1": 1, "i8": 1, "u1": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8}
"""Triton's integer parameter types and their sizes in the kernel's parameter buffer."""


@dataclass(frozen=True)
class LaunchPlan:
    """What the gate's C++ launch needs (``served_gate.cpp``'s ``plan_of``), and the tensors it points at."""

    function: int
    grid: tuple[int, int, int]
    block: int
    shared: int
    output_given: bool
    output: object
    """An output of the call (its sizes, strides, dtype and device are the plan's), or None for an .out form."""
    args: list[PlanArg]
    kept: list[object]

    def as_tuple(self) -> tuple[object, ...]:
        return (self.function, self.grid, self.block, self.shared, self.output_given, self.output, self.args)


def plan_of(launch: DirectLaunch, args: tuple[object, ...], result: object, out: object) -> LaunchPlan | None:
    """The plan of one recorded launch made by a served call of ``args`` (its positional tensors) returning
    ``result`` (``out``, the call's out tensor, for an .out form), or None where a parameter is none of: a call
    tensor (by identity), the output, an integer, a constexpr, or a tensor the spec keeps whose memory no call
    tensor shares; or where the kernel needs what the C++ launch does not give (clusters, cooperative or
    programmatic launch, scratch memory)."""
    compiled = launch.compiled
    metadata = getattr(compiled, "metadata", None)
    signature = getattr(getattr(compiled, "src", None), "signature", None)
    function = getattr(compiled, "function", None)
    if metadata is None or not isinstance(signature, dict) or not isinstance(function, int):
        return None
    if (
        getattr(metadata, "num_ctas", 1) != 1
        or getattr(metadata, "launch_cooperative_grid", False)
        or getattr(metadata, "launch_pdl", False)
        or getattr(metadata, "global_scratch_size", 0)
        or getattr(metadata, "profile_scratch_size", 0)
        or len(signature) != len(launch.args)
    ):
        return None
    call_pointers = {t.data_ptr() for t in (*args, result) if hasattr(t, "data_ptr")}
    recipe: list[PlanArg] = []
    kept: list[object] = []
    for kind, value in zip(signature.values(), launch.args, strict=True):
        if kind == "constexpr":
            continue
        if not isinstance(kind, str):
            return None  # a tuple parameter
        if kind.startswith("*"):
            index = next((i for i, t in enumerate(args) if value is t), None)
            if value is result:
                recipe.append((OUTPUT, 0, 8))
            elif index is not None:
                recipe.append((INPUT, index, 8))
            elif hasattr(value, "data_ptr") and value.data_ptr() not in call_pointers:
                kept.append(value)  # memory the spec keeps for the key (a split-K workspace): kept alive here
                recipe.append((BYTES, int(value.data_ptr()), 8))
            else:
                return None  # a pointer the recipe cannot name for every call of the form
        elif kind in INT_BYTES and isinstance(value, (bool, int)):
            recipe.append((BYTES, int(value), INT_BYTES[kind]))
        else:
            return None
    return LaunchPlan(
        function,
        (int(launch.grid[0]), int(launch.grid[1]), int(launch.grid[2])),
        32 * int(metadata.num_warps),
        int(metadata.shared),
        out is not None,
        None if out is not None else result,
        recipe,
        kept,
    )
