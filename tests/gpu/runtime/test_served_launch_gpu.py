"""A served key's prepared launcher on a real GPU: its first call launches through Triton's JIT, later calls launch
the compiled kernel directly; both give the library's answer, bit for bit the same as each other, for each kernel
family (plain, fused split-K with a bias, TMA, TMA persistent, the one-row GEMV with a bias, the wide tile with a
bias and on TMA, TMA's fused split-K) and for a ``.out``
call; the fused split-K's kept arrival counters stay right across calls and inside a CUDA graph (recorded once,
replayed on new inputs)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import KERNELS, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]
torch = pytest.importorskip("torch")

BASE = {"GROUP_M": 8, "SPLIT_K": 1, "FUSED": 0, "TMA": 0, "PERSISTENT": 0, "num_warps": 4, "num_stages": 3}
CONFIGS = {
    "plain": {**BASE, "BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64},
    "fused-split-k": {**BASE, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 128, "SPLIT_K": 4, "FUSED": 1},
    "tma": {**BASE, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "TMA": 1},
    "tma-persistent": {**BASE, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "TMA": 1, "PERSISTENT": 1},
    "gemv": {**BASE, "BLOCK_M": 16, "BLOCK_N": 1, "BLOCK_K": 1024, "GEMV": 1, "num_warps": 8, "num_stages": 1},
    "wide": {**BASE, "BLOCK_M": 64, "BLOCK_N": 160, "BLOCK_K": 64},  # N = 256: the second tile's tail cut
    "tma-wide": {**BASE, "BLOCK_M": 64, "BLOCK_N": 160, "BLOCK_K": 64, "TMA": 1},
    "tma-split-k": {**BASE, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 128, "SPLIT_K": 4, "FUSED": 1, "TMA": 1},
}
M, N, K = 16, 256, 1024
ROWS = {"gemv": 1}
"""The GEMV form is decode's (M <= 8): its key is one row; the others keep M."""


def _serve() -> Any:
    from kerntune.runtime.serving import load_served_spec

    serve = load_served_spec(KERNELS / "triton_gemm").serve
    assert serve is not None and serve.prepare is not None
    return serve


def _operands(bias: bool, seed: int, m: int = M) -> tuple[Any, ...]:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, K, device="cuda", generator=gen).bfloat16()
    weight = torch.randn(N, K, device="cuda", generator=gen).bfloat16()  # nn.Linear's, seen by mm as its .t()
    return (torch.randn(N, device="cuda", generator=gen).bfloat16(), a, weight.t()) if bias else (a, weight.t())


@pytest.mark.parametrize("family", list(CONFIGS))
def test_the_direct_launch_gives_the_jit_launch_answer(family: str) -> None:
    serve, config = _serve(), CONFIGS[family]
    bias = family in ("fused-split-k", "gemv", "wide")  # TMA takes no bias here (the spec's constraint)
    op = "aten::addmm" if bias else "aten::mm"
    args = _operands(bias, 0, ROWS.get(family, M))
    key = serve.shape(op, args, {})
    assert key is not None, "the spec must take this call"
    launcher = serve.prepare(op, dict(zip(("M", "N", "K", "layout", "bias"), key[1:], strict=True)), config)
    first = launcher(args, {})  # through the JIT: compiles, makes the direct launcher
    later = [launcher(args, {}).clone() for _ in range(3)]  # direct
    expected = torch.addmm(*args) if bias else torch.mm(*args)
    torch.cuda.synchronize()
    assert torch.allclose(first.float(), expected.float(), rtol=2e-2, atol=2e-1), family
    for out in later:
        assert torch.equal(out, first), f"{family}: the direct launch differs from the JIT's"
    # An .out call of the same key writes the given tensor.
    given = torch.empty_like(first)
    launcher(args, {"out": given})
    assert torch.equal(given, first)


def test_fused_split_k_keeps_its_counters_right_inside_a_cuda_graph() -> None:
    serve, config = _serve(), CONFIGS["fused-split-k"]
    op, args = "aten::addmm", _operands(True, 1)
    key = serve.shape(op, args, {})
    assert key is not None
    launcher = serve.prepare(op, dict(zip(("M", "N", "K", "layout", "bias"), key[1:], strict=True)), config)
    static = [t.clone() for t in args[:2]] + [args[2].t().clone().t()]
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    # Warmed up and recorded on one stream, as torch.compile's CUDA-graph trees do: the warm-up compiles, makes
    # the direct launcher and the stream's counters, which the recording then holds (no memset in the graph).
    with torch.cuda.stream(side):
        for _ in range(2):
            launcher(tuple(static), {"out": out})
    side.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        launcher(tuple(static), {"out": out})
    for seed in (2, 3, 4):
        fresh = _operands(True, seed)
        for dst, src in zip(static, fresh, strict=True):
            dst.copy_(src)
        graph.replay()
        torch.cuda.synchronize()
        expected = torch.addmm(*fresh)
        assert torch.allclose(out.float(), expected.float(), rtol=2e-2, atol=2e-1), seed
