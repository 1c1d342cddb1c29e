"""cuBLASLt's own algorithms as the candidates of a GEMM call, through NVIDIA's nvmath-python.

A config is a rank ``ALGO`` in cuBLASLt's heuristic list for the call: its shape, layout, dtype and bias epilogue
(``kerntune.ops.gemm``), asked of cuBLASLt with a limit of ``LIMIT`` algorithms. So the tuner races the library's
alternatives under the same gate, flush and timer as any kernel, beside the library's default call. A rank past the
end of the list the library gives for a shape is a failed candidate (``unsupported``), never a silent substitute.

Row-major C = A·B is computed as column-major Cᵀ = Bᵀ·Aᵀ, written in place into C's storage: cuBLASLt's bias
epilogue needs a column-major output, and this is the form the library's own call takes. The plan (heuristics,
descriptors, workspace) is made once per call shape and operand identity; a served key keeps one plan, re-points its
operands each call, allocates only the output and never synchronises, so it can be captured in a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

import kerntune as kt
from kerntune.errors import CandidateFailed
from kerntune.ops import gemm as gemm_op

LIMIT = 16


@dataclass
class Plan:
    """One planned cuBLASLt matmul: the nvmath object and the algorithms its heuristics returned, best first."""

    matmul: Any
    algorithms: list[Any]


def plan(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None) -> Plan:
    """Plan Cᵀ = Bᵀ·Aᵀ (+ bias along Cᵀ's rows) in place into ``c``'s storage."""
    from nvmath.linalg.advanced import Matmul, MatmulEpilog

    matmul = Matmul(b.t(), a.t(), c=c.t(), beta=0.0, options={"inplace": True})
    epilog = {"epilog": MatmulEpilog.BIAS, "epilog_inputs": {"bias": bias}} if bias is not None else {}
    return Plan(matmul, list(matmul.plan(preferences={"limit": LIMIT}, **epilog)))


def algorithm(found: Plan, rank: int) -> Any:
    if rank >= len(found.algorithms):
        raise CandidateFailed(
            "unsupported", f"cuBLASLt gave {len(found.algorithms)} algorithms for this call; rank {rank} is past them"
        )
    return found.algorithms[rank]


_PLANS: dict[tuple[Any, ...], Plan] = {}


def _identity(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None) -> tuple[Any, ...]:
    return tuple((t.data_ptr(), tuple(t.shape), t.stride(), t.dtype) for t in (a, b, c, bias) if t is not None)


def launch(args: dict[str, Any], meta: Mapping[str, Any]) -> torch.Tensor:
    """The tuner's launch: the inputs of one shape stay the same tensors, so their plan is made once."""
    a, b, c, bias = args["a"], args["b"], args["c"], args.get("bias")
    key = _identity(a, b, c, bias)
    found = _PLANS.get(key)
    if found is None:
        found = _PLANS[key] = plan(a, b, c, bias)
    found.matmul.execute(algorithm=algorithm(found, int(meta["ALGO"])))
    return c


def served_prepare(
    op: str, shape: Mapping[str, Any], config: Mapping[str, Any]
) -> Callable[[tuple[Any, ...], dict[str, Any]], torch.Tensor]:
    """A served key's launcher: its first call plans on that call's operands; every call re-points the plan's
    operands (and bias) and runs the key's algorithm into a fresh output."""
    m, n = int(shape["M"]), int(shape["N"])
    addmm = op.startswith("aten::addmm")
    held: list[tuple[Plan, Any]] = []

    def launcher(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
        bias, a, b = args if addmm else (None, *args)
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
        if not held:
            found = plan(a, b, c, bias)
            held.append((found, algorithm(found, int(config["ALGO"]))))
        else:
            epilog = {"epilog_inputs": {"bias": bias}} if bias is not None else {}
            held[0][0].matmul.reset_operands(a=b.t(), b=a.t(), c=c.t(), **epilog)
        held[0][0].matmul.execute(algorithm=held[0][1])
        return c

    return launcher


def served_run(
    op: str, shape: Mapping[str, Any], config: Mapping[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> torch.Tensor:
    return served_prepare(op, shape, config)(args, kwargs)


def read_call(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> gemm_op.GemmKey | None:
    """Plain ``mm`` and ``addmm`` calls only: the ``.out`` forms stay with the library."""
    return None if kwargs and "out" in kwargs else gemm_op.read_call(op, args, kwargs)


def cuda_only(c: Mapping[str, Any], s: Mapping[str, Any], t: kt.Target | None) -> bool:
    """Capability: cuBLASLt runs on NVIDIA GPUs."""
    return t is None or t.vendor == "nvidia"


problem = kt.Problem(
    name="cublaslt_gemm",
    kernel=kt.TorchCallable(launch, "cublasLt"),
    space=kt.Space(
        params={"ALGO": list(range(LIMIT))},
        constraints=[kt.Constraint(cuda_only, "cuBLASLt needs an NVIDIA GPU")],
        default={"ALGO": 0},
    ),
    shapes=[{"M": 4096, "N": 4096, "K": 4096, "layout": "NT", "bias": 0}],
    dtypes=("bfloat16", "float16"),
    make_inputs=gemm_op.make_inputs,
    reference=gemm_op.reference,
    outputs=("c",),
    cost=gemm_op.cost,
    baselines=[kt.Baseline("torch.matmul", kernel=kt.TorchCallable(gemm_op.library, "torch.matmul"))],
    serve=kt.Serve(
        ops=("aten::mm", "aten::addmm"), shape=read_call, run=served_run, prepare=served_prepare, kernel="nvjet"
    ),
)
