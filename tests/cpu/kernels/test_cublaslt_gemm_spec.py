"""cuBLASLt's algorithms as a spec, read on a machine with no GPU and no nvmath-python: the space is the heuristic
ranks, only NVIDIA targets take it, and it reads the same GEMM calls as every GEMM spec but the ``.out`` forms."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

from kerntune.model import Config, Shape, Target  # noqa: E402

SPEC = Path(__file__).resolve().parents[3] / "kernels" / "cublaslt_gemm" / "spec.py"


@pytest.fixture(scope="module")
def spec() -> ModuleType:
    found = importlib.util.spec_from_file_location("cublaslt_gemm_spec", SPEC)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    sys.modules[found.name] = module  # dataclasses resolve their module by name
    found.loader.exec_module(module)
    return module


def target(vendor: str, arch: str) -> Target:
    return Target(backend="torch", vendor=vendor, arch=arch, device_name="test", compute_units=132)


def test_the_configs_are_the_heuristic_ranks_and_only_nvidia_takes_them(spec: ModuleType) -> None:
    space = spec.problem.space
    shape = Shape.of({"M": 256, "N": 4096, "K": 4096, "layout": "NT", "bias": 1})
    assert space.params["ALGO"] == list(range(spec.LIMIT))
    assert space.check(Config.of({"ALGO": 3}), shape, target("nvidia", "sm_90")) is None
    assert space.check(Config.of({"ALGO": 3}), shape, target("amd", "gfx942")) == "cuBLASLt needs an NVIDIA GPU"


def test_it_reads_mm_and_addmm_calls_and_leaves_out_forms_to_the_library(spec: ModuleType) -> None:
    a = torch.randn(64, 128, dtype=torch.bfloat16)
    w = torch.randn(256, 128, dtype=torch.bfloat16)
    bias = torch.randn(256, dtype=torch.bfloat16)
    assert spec.read_call("aten::mm", (a, w.t()), {}) == ("bfloat16", 64, 256, 128, "NT", 0)
    assert spec.read_call("aten::addmm", (bias, a, w.t()), {}) == ("bfloat16", 64, 256, 128, "NT", 1)
    out = torch.empty(64, 256, dtype=torch.bfloat16)
    assert spec.read_call("aten::mm.out", (a, w.t()), {"out": out}) is None
    assert spec.read_call("aten::mm", (a.float(), w.t().float()), {}) is None  # fp32 stays with the library


def test_a_rank_past_the_librarys_list_is_a_failed_candidate(spec: ModuleType) -> None:
    from kerntune.errors import CandidateFailed

    found = spec.Plan(matmul=None, algorithms=["first", "second"])
    assert spec.algorithm(found, 1) == "second"
    with pytest.raises(CandidateFailed, match="rank 5 is past them"):
        spec.algorithm(found, 5)
