"""``plan_of``: the recipe of one recorded launch, as the native gate repeats it from C++. Each kernel parameter is
named for every call of the form (a call tensor, the output, an integer, memory the spec keeps) or there is no
plan. The recorded kernel is described by the attributes a Triton ``CompiledKernel`` carries; the launch itself
is a GPU test (tests/gpu/runtime/test_native_gate_gpu.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kerntune.runtime.launch_plan import BYTES, INPUT, OUTPUT, TENSOR_MAP, DirectLaunch, plan_of


@dataclass
class Buffer:
    """A tensor as the recipe sees one: its data pointer, and its elements' layout (a 2-byte element type)."""

    address: int
    shape: tuple[int, ...] = (1 << 24,)
    strides: tuple[int, ...] = (1,)

    def data_ptr(self) -> int:
        return self.address

    def stride(self) -> tuple[int, ...]:
        return self.strides

    def element_size(self) -> int:
        return 2


@dataclass
class Compiled:
    signature: dict[str, str]
    function: int = 0x7F00
    metadata: SimpleNamespace = field(
        default_factory=lambda: SimpleNamespace(num_warps=4, shared=8192, num_ctas=1, global_scratch_size=0)
    )

    @property
    def src(self) -> SimpleNamespace:
        return SimpleNamespace(signature=self.signature)


SIGNATURE = {"a": "*bf16", "b": "*bf16", "c": "*bf16", "ws": "*fp32", "M": "i32", "K": "i64", "BLOCK": "constexpr"}


TMA_TYPES = {9: 8}
"""A TMA element type as the driver numbers it (Triton's bf16 is 9 in a kernel's metadata, 8 for the driver)."""


def _launch(compiled: Any, *args: Any) -> DirectLaunch:
    return DirectLaunch(compiled, (4, 2, 1), args, TMA_TYPES)


def test_each_parameter_is_named_for_every_call_of_the_form() -> None:
    a, b, c, ws = Buffer(0x1000), Buffer(0x2000), Buffer(0x3000), Buffer(0x9000)
    plan = plan_of(_launch(Compiled(SIGNATURE), a, b, c, ws, 16, 4096, 64), (a, b), c, None)
    assert plan is not None
    assert plan.args == [
        (INPUT, 0, 8),
        (INPUT, 1, 8),
        (OUTPUT, 0, 8),
        (BYTES, 0x9000, 8),
        (BYTES, 16, 4),
        (BYTES, 4096, 8),
    ]
    assert plan.kept == [ws]  # the workspace stays alive with the plan
    assert (plan.grid, plan.block, plan.shared, plan.function) == ((4, 2, 1), 128, 8192, 0x7F00)
    assert not plan.output_given and plan.output is c

    out = Buffer(0x5000)  # an .out form: the kernel writes the call's out
    given = plan_of(_launch(Compiled(SIGNATURE), a, b, out, ws, 16, 4096, 64), (a, b), out, out)
    assert given is not None and given.output_given and given.output is None


def test_a_parameter_the_recipe_cannot_name_leaves_no_plan() -> None:
    a, b, c = Buffer(0x1000), Buffer(0x2000), Buffer(0x3000)
    # mm(a, a): both pointers would name operand 0, and a later call of the form with two operands would read one
    assert plan_of(_launch(Compiled(SIGNATURE), a, a, c, Buffer(9), 16, 4096, 64), (a, a), c, None) is None
    view = Buffer(0x1000)  # another object over a's memory: which call tensor it follows is not known
    assert plan_of(_launch(Compiled(SIGNATURE), a, b, c, view, 16, 4096, 64), (a, b), c, None) is None
    assert plan_of(_launch(Compiled(SIGNATURE), a, b, c, object(), 16, 4096, 64), (a, b), c, None) is None
    floats = {**SIGNATURE, "M": "fp32"}
    assert plan_of(_launch(Compiled(floats), a, b, c, Buffer(9), 1.5, 4096, 64), (a, b), c, None) is None
    scratch = Compiled(SIGNATURE, metadata=SimpleNamespace(num_warps=4, shared=0, global_scratch_size=256))
    assert plan_of(_launch(scratch, a, b, c, Buffer(9), 16, 4096, 64), (a, b), c, None) is None
    clustered = Compiled(SIGNATURE, metadata=SimpleNamespace(num_warps=4, shared=0, num_ctas=2))
    assert plan_of(_launch(clustered, a, b, c, Buffer(9), 16, 4096, 64), (a, b), c, None) is None
    assert plan_of(_launch(Compiled(SIGNATURE), a, b, c), (a, b), c, None) is None  # parameters missing


@dataclass
class Descriptor:
    """A host ``TensorDescriptor`` as the recipe sees one."""

    base: Buffer
    shape: list[int]
    strides: list[int]
    block_shape: list[int]
    padding: str = "zero"


DESCRIBED = {"a_desc": "tensordesc<bf16[16, 64]>", "b_desc": "tensordesc<bf16[32, 64]>", "M": "i32", "B_T": "constexpr"}


def _tma_meta(count: int) -> SimpleNamespace:
    meta = {"swizzle": 3, "elem_size": 2, "elem_type": 9, "block_size": [16, 64], "fp4_padded": False}
    return SimpleNamespace(num_warps=4, shared=0, num_ctas=1, tensordesc_meta=[dict(meta) for _ in range(count)])


def test_a_tma_descriptor_is_named_by_its_tensor_and_encoded_as_triton_encodes_it() -> None:
    a, b, c = Buffer(0x1000), Buffer(0x2000), Buffer(0x3000)
    b_view = Buffer(0x2000)  # B's transpose view: another object over B's memory
    compiled = Compiled(DESCRIBED, metadata=_tma_meta(2))
    descriptors = (
        Descriptor(a, [16, 4096], [4096, 1], [16, 64]),
        Descriptor(b_view, [1024, 4096], [4096, 1], [32, 64]),
    )
    plan = plan_of(_launch(compiled, *descriptors, 16, 1), (a, b), c, None)
    assert plan is not None
    host = TMA_TYPES[9]
    assert plan.args == [
        (TENSOR_MAP, 0, 128, (host, 2, 3, 2, 16, 64, 16, 4096, 4096, 1)),
        (BYTES, 16, 4),
        (BYTES, 4096, 4),
        (BYTES, 4096, 8),
        (BYTES, 1, 8),
        (TENSOR_MAP, 1, 128, (host, 2, 3, 2, 16, 64, 1024, 4096, 4096, 1)),
        (BYTES, 1024, 4),
        (BYTES, 4096, 4),
        (BYTES, 4096, 8),
        (BYTES, 1, 8),
        (BYTES, 16, 4),
    ]
    on_output = plan_of(
        _launch(compiled, Descriptor(c, [16, 1024], [1024, 1], [16, 64]), descriptors[1], 16, 1), (a, b), c, None
    )
    assert on_output is not None and on_output.args[0][:2] == (TENSOR_MAP, -1)


def test_a_tma_descriptor_the_plan_cannot_repeat_leaves_no_plan() -> None:
    a, b, c = Buffer(0x1000), Buffer(0x2000), Buffer(0x3000)
    good = Descriptor(b, [1024, 4096], [4096, 1], [32, 64])

    def plan(first: Descriptor, call: tuple[Any, ...] = (a, b), metadata: SimpleNamespace | None = None) -> Any:
        compiled = Compiled(DESCRIBED, metadata=metadata or _tma_meta(2))
        return plan_of(_launch(compiled, first, good, 16, 1), call, c, None)

    assert plan(Descriptor(a, [16, 4096], [4096, 1], [16, 64])) is not None
    assert plan(Descriptor(Buffer(0x1040), [16, 4096], [4096, 1], [16, 64])) is None  # an offset view: no call tensor
    assert plan(Descriptor(a, [16, 4096], [4096, 1], [16, 64]), call=(a, b, Buffer(0x1000))) is None  # aliased
    small = Buffer(0x1000, (16, 1024), (1024, 1))  # the descriptor reaches past the tensor it starts at
    assert plan(Descriptor(small, [16, 4096], [4096, 1], [16, 64]), call=(small, b)) is None
    assert plan(Descriptor(a, [16, 4096], [4096, 1], [16, 64], padding="nan")) is None
    assert plan(Descriptor(a, [16, 4096], [4096, 1], [16, 64]), metadata=_tma_meta(0)) is None  # not lowered to TMA
    fp4 = _tma_meta(2)
    fp4.tensordesc_meta[0]["fp4_padded"] = True
    assert plan(Descriptor(a, [16, 4096], [4096, 1], [16, 64]), metadata=fp4) is None
    unknown = DirectLaunch(Compiled(DESCRIBED, metadata=_tma_meta(2)), (4, 2, 1), (good, good, 16, 1))  # no types
    assert plan_of(unknown, (a, b), c, None) is None
