"""Library ops as candidates: the torch backend tunes a choice between implementations of one product."""

from __future__ import annotations

from typing import Any

import torch

import kerntune as kt


def product(args: dict[str, Any], meta: dict[str, Any]) -> None:
    a, b, c = args["a"], args["b"], args["c"]
    if meta["impl"] == "matmul":
        torch.matmul(a, b, out=c)
    elif meta["impl"] == "mm":
        torch.mm(a, b, out=c)
    else:  # "einsum": no out=, so it writes through a copy
        c.copy_(torch.einsum("ik,kj->ij", a, b))


def make_inputs(shape: dict[str, Any], dtype: str, seed: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(seed)
    n = int(shape["N"])
    return {"a": torch.randn(n, n, generator=gen), "b": torch.randn(n, n, generator=gen), "c": torch.empty(n, n)}


problem = kt.Problem(
    name="torch_ops",
    kernel=kt.TorchCallable(product, "product"),
    space=kt.Space(params={"impl": ["matmul", "mm", "einsum"]}),
    shapes=[{"N": 64}],
    make_inputs=make_inputs,
    reference=lambda args, shape: args["a"].double() @ args["b"].double(),
    outputs=("c",),
)
