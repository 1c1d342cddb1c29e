"""Launch plans: a served form's launch as the native gate repeats it from C++. Standard library only.

``kerntune.backends.triton_launch``'s direct launcher appends each launch here while ``recording`` is a list: the
native gate sets it around one served call, and ``plan_of`` turns the one launch that call made into a plan
(``native/served_gate.cpp`` launches it). Outside that call ``recording`` is None and a launch pays one attribute
read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class DirectLaunch:
    """One launch of a compiled kernel: the kernel (Triton's ``CompiledKernel``), its grid, and every parameter in
    signature order, constexprs included."""

    compiled: object
    grid: tuple[int, int, int]
    args: tuple[object, ...]
    tensor_map_types: Mapping[int, int] = field(default_factory=dict)
    """The backend's TMA element types (a kernel's ``tensordesc_meta``) as the driver's ``CUtensorMapDataType``;
    empty where it has none, and a launch with a tensor descriptor gets no plan."""


recording: list[DirectLaunch] | None = None


PlanArg = tuple[int, int, int] | tuple[int, int, int, tuple[int, ...]]
"""(kind, value, size): INPUT (value: the call tensor's index), OUTPUT, or BYTES (value, in ``size`` bytes); or
(TENSOR_MAP, tensor, 128, encoding): a TMA descriptor (a CUtensorMap passed by value) of a call tensor (its
index) or of the output (-1), encoded as Triton encodes it (``TensorMapArg``)."""
INPUT, OUTPUT, BYTES, TENSOR_MAP = 0, 1, 2, 3
INT_BYTES = {"i1": 1, "i8": 1, "u1": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8}
"""Triton's integer parameter types and their sizes in the kernel's parameter buffer."""


@dataclass(frozen=True)
class TensorMapArg:
    """A TMA descriptor's encoding, as Triton's launcher makes it for a host ``TensorDescriptor`` of a kernel
    lowered to TMA (``make_tensordesc_arg``): the C++ launch encodes it once with the form's first address and
    re-points it at each call's tensor (``cuTensorMapReplaceAddress``). Sizes and strides in elements,
    outermost first."""

    tensor: int
    """The call tensor's index, or -1 for the output."""
    data_type: int
    """The driver's ``CUtensorMapDataType``."""
    element_size: int
    swizzle: int
    box: tuple[int, ...]
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def as_tuple(self) -> tuple[int, ...]:
        rank = len(self.box)
        return (self.data_type, self.element_size, self.swizzle, rank, *self.box, *self.shape, *self.strides)


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
    operands = [t.data_ptr() for t in args if hasattr(t, "data_ptr")]
    if len(set(operands)) != len(operands):
        return None  # operands sharing memory: the form does not record it, so a later call's may not
    call_pointers = {*operands, *([result.data_ptr()] if hasattr(result, "data_ptr") else [])}
    descriptor_meta = list(getattr(metadata, "tensordesc_meta", None) or ())
    recipe: list[PlanArg] = []
    kept: list[object] = []
    for kind, value in zip(signature.values(), launch.args, strict=True):
        if kind == "constexpr":
            continue
        if not isinstance(kind, str):
            return None  # a tuple parameter
        if kind.startswith("tensordesc"):
            # Triton passes a descriptor as its CUtensorMap, then its sizes (i32) and strides (i64).
            if not descriptor_meta:
                return None  # a kernel not lowered to TMA takes a descriptor as pointer, sizes and strides
            encoding = _tensor_map(value, descriptor_meta.pop(0), launch.tensor_map_types, args, result)
            if encoding is None:
                return None
            recipe.append((TENSOR_MAP, encoding.tensor, 128, encoding.as_tuple()))
            recipe.extend((BYTES, size, 4) for size in encoding.shape)
            recipe.extend((BYTES, stride, 8) for stride in encoding.strides)
        elif kind.startswith("*"):
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


def _tensor_map(
    descriptor: object, meta: object, types: Mapping[int, int], args: tuple[object, ...], result: object
) -> TensorMapArg | None:
    """The encoding of a host ``TensorDescriptor`` as Triton's launcher encodes it for a kernel that reads it
    through TMA (``meta``: the kernel's ``tensordesc_meta`` entry), or None where the plan cannot repeat it: its
    base is not exactly one call tensor or the output (by address: a transpose view shares its tensor's), an
    FP4-padded or NaN-padded descriptor, a layout other than row-major innermost, or an element type ``types``
    does not hold."""
    base = getattr(descriptor, "base", None)
    shape, strides = getattr(descriptor, "shape", None), getattr(descriptor, "strides", None)
    if not isinstance(meta, dict) or meta.get("fp4_padded") or base is None or shape is None or strides is None:
        return None
    if getattr(descriptor, "padding", "zero") != "zero":
        return None  # NaN padding: an out-of-bounds fill the plan does not encode
    address = base.data_ptr() if hasattr(base, "data_ptr") else None
    named = [i for i, t in enumerate(args) if hasattr(t, "data_ptr") and t.data_ptr() == address]
    if hasattr(result, "data_ptr") and result.data_ptr() == address:
        named.append(-1)
    if len(named) != 1:
        return None  # none, or aliased call tensors: which one later calls of the form follow is not known
    tensor = result if named[0] < 0 else args[named[0]]
    if not _spans_within(descriptor, base, tensor):
        return None  # it reaches past the tensor it starts at (a view of a larger buffer): not that tensor's
    try:
        box = tuple(int(b) for b in meta["block_size"])
        encoding = TensorMapArg(
            named[0],
            types[int(meta["elem_type"])],
            int(meta["elem_size"]),
            int(meta["swizzle"]),
            box,
            tuple(int(d) for d in shape),
            tuple(int(s) for s in strides),
        )
    except Exception:  # another Triton's metadata
        return None
    rank = len(encoding.box)
    if not 1 <= rank <= 5 or len(encoding.shape) != rank or len(encoding.strides) != rank:
        return None
    return encoding if encoding.strides[-1] == 1 else None


def _span_bytes(shape: object, strides: object, element_size: int) -> int:
    """The bytes from the first element to the last one past it, for positive sizes and non-negative strides."""
    sizes, steps = [int(d) for d in shape], [int(t) for t in strides]  # type: ignore[attr-defined]
    if len(sizes) != len(steps) or min(sizes, default=1) < 1 or min(steps, default=0) < 0:
        raise ValueError("not a plain strided layout")
    return (1 + sum((d - 1) * t for d, t in zip(sizes, steps, strict=True))) * element_size


def _spans_within(descriptor: object, base: object, tensor: object) -> bool:
    """Whether every element the descriptor can address lies within ``tensor``'s own elements."""
    try:
        reach = _span_bytes(descriptor.shape, descriptor.strides, base.element_size())  # type: ignore[attr-defined]
        own = _span_bytes(tensor.shape, tensor.stride(), tensor.element_size())  # type: ignore[attr-defined]
    except Exception:  # not a tensor as torch makes them
        return False
    return reach <= own
