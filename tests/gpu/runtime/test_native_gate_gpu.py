"""The native gate on a real GPU: a served form's later calls launch the tuned kernel from C++ (a launch plan),
giving the served kernel's answer bit for bit, counted per call, allocating only the output, inside a CUDA graph
too; a missed form runs the library's kernel from C++. And ``served-model/serve_cost.py`` runs and reports the
host cost of a miss and a hit over the library's call (the figures are printed, the targets are checked by the
lead on the GPU host)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, ROOT, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]
torch = pytest.importorskip("torch")

SPEC = EXAMPLES.parent / "kernels" / "triton_gemm"
BASE = {"GROUP_M": 8, "SPLIT_K": 1, "FUSED": 0, "TMA": 0, "PERSISTENT": 0, "num_warps": 4, "num_stages": 3}
CONFIGS = {
    "plain": {**BASE, "BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64},
    "fused-split-k": {**BASE, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 128, "SPLIT_K": 4, "FUSED": 1},
    "tma": {**BASE, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 64, "TMA": 1},
}
M, N, K = 16, 256, 1024


def _table(path: Path, config: dict[str, Any], bias: int) -> Path:
    from kerntune.runtime.keys import problem_source_hash, torch_device_fields
    from kerntune.runtime.serving import load_served_spec

    spec = load_served_spec(SPEC)
    key = {
        "op": spec.name,
        "source": problem_source_hash(spec),
        "dtype": "bfloat16",
        **torch_device_fields(),
        "M": M,
        "N": N,
        "K": K,
        "layout": "NT",
        "bias": bias,
    }
    entry = {"key": key, "config": config, "status": "measured", "spec": str(SPEC)}
    path.write_text(json.dumps({"schema": 1, "validators": {}, "entries": [entry]}))
    return path


@pytest.mark.parametrize("family", list(CONFIGS))
def test_a_served_form_launches_from_cpp_with_the_served_kernels_answer(family: str, tmp_path: Path) -> None:
    from kerntune.runtime.serving import load_served_spec, serve

    bias = int(family == "fused-split-k")
    serving = serve(_table(tmp_path / "t.json", CONFIGS[family], bias), specs=[SPEC])
    try:
        assert serving.native is not None, "the native gate must be built and installed on the GPU host"
        gen = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(M, K, device="cuda", generator=gen).bfloat16()
        weight = torch.randn(N, K, device="cuda", generator=gen).bfloat16()
        vector = torch.randn(N, device="cuda", generator=gen).bfloat16()
        args = (vector, a, weight.t()) if bias else (a, weight.t())
        call = (lambda: torch.addmm(*args)) if bias else (lambda: torch.mm(*args))
        outputs = [call().clone() for _ in range(6)]  # first call (JIT), planned at the second, then from C++
        missed = torch.mm(a, weight.t().contiguous())  # layout NN: no entry, a miss
        torch.cuda.synchronize()
        stats = serving.stats()
        op = "aten::addmm" if bias else "aten::mm"
        assert stats["ops"][op]["served"] == 6 and stats["ops"][op]["failed"] == 0, stats
        assert serving.native.planned == 1, "the served form must have a launch plan"
        for out in outputs[1:]:
            assert torch.equal(out, outputs[0]), f"{family}: the C++ launch differs from the served kernel's"
        spec = load_served_spec(SPEC)
        assert spec.serve is not None
        shape = {"M": M, "N": N, "K": K, "layout": "NT", "bias": bias}
        for seed in (1, 2):  # new operands at new addresses: the plan follows them (a TMA descriptor re-pointed)
            fresh = [torch.randn_like(t) for t in args[:-1]] + [torch.randn_like(weight).t()]
            got = torch.addmm(*fresh) if bias else torch.mm(*fresh)
            want = spec.serve.run(op, shape, CONFIGS[family], tuple(fresh), {})
            torch.cuda.synchronize()
            assert torch.equal(got, want), f"{family}: the plan's launch on new operands differs (seed {seed})"
        fresh_stats = serving.stats()["ops"][op]
        assert fresh_stats["served"] == 8 and fresh_stats["failed"] == 0, fresh_stats  # served, by the plan
        assert serving.native.planned == 1
        expected = torch.addmm(*args) if bias else torch.mm(*args)  # served too; compare with the float reference
        reference = (a.double() @ weight.double().t() + (vector.double() if bias else 0)).to(expected.dtype)
        assert torch.allclose(outputs[0].float(), reference.float(), rtol=2e-2, atol=2e-1)
        assert stats["ops"]["aten::mm"]["library"] >= 1
        assert torch.allclose(missed.float(), (a.double() @ weight.double().t()).float(), rtol=2e-2, atol=2e-1)

        # Inside a CUDA graph: recorded once, replayed on new inputs, the plan's launch is captured.
        static = [t.clone() for t in args[:-1]] + [args[-1].t().clone().t()]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                captured = torch.addmm(*static) if bias else torch.mm(*static)
        torch.cuda.current_stream().wait_stream(side)
        static[-2].copy_(static[-2] * 0.5)
        graph.replay()
        torch.cuda.synchronize()
        direct = spec.serve.run(op, shape, CONFIGS[family], tuple(static), {})
        torch.cuda.synchronize()
        assert torch.equal(captured, direct), f"{family}: the replayed graph differs from the served kernel"
    finally:
        serving.close()


def test_serve_cost_reports_the_native_gates_miss_and_hit() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "served-model" / "serve_cost.py"),
            "--rounds",
            "3",
            "--calls",
            "500",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    result = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    assert result["gate"] == {"miss": "native", "hit": "native"}
    for side in ("miss", "hit", "miss_python", "hit_python"):
        assert f"{side}_over_library_us" in result
