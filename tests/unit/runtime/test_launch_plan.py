"""``plan_of``: the recipe of one recorded launch, as the native gate repeats it from C++. Each kernel parameter is
named for every call of the form (a call tensor, the output, an integer, memory the spec keeps) or there is no
plan. The recorded kernel is described by the attributes a Triton ``CompiledKernel`` carries; the launch itself
is a GPU test (tests/gpu/runtime/test_native_gate_gpu.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kerntune.runtime.launch_plan import BYTES, INPUT, OUTPUT, DirectLaunch, plan_of


@dataclass
class Buffer:
    """A tensor as the recipe sees one: its data pointer."""

    address: int

    def data_ptr(self) -> int:
        return self.address


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


def _launch(compiled: Any, *args: Any) -> DirectLaunch:
    return DirectLaunch(compiled, (4, 2, 1), args)


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
