"""Where specs live: examples/ holds short teaching specs, kernels/ the product families. Each module stays small,
the product GEMM's spec pins the modules its digest does not cover, and no spec loads a file from another example's
folder."""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "kernels" / "triton_gemm"


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_the_teaching_matmul_is_short_with_one_kernel_and_a_few_parameters() -> None:
    spec = ROOT / "examples" / "triton_matmul" / "spec.py"
    assert _lines(spec) <= 120
    tree = ast.parse(spec.read_text())
    jitted = [f.name for f in tree.body if isinstance(f, ast.FunctionDef) and f.decorator_list]
    assert jitted == ["matmul_kernel"]
    params = re.search(r"params=\{(.*?)\}", spec.read_text(), re.S)
    assert params and params.group(1).count(":") <= 6


def test_every_product_gemm_module_is_small() -> None:
    modules = sorted(GEMM.glob("*.py"))
    assert {p.name for p in modules} >= {"spec.py", "kernels.py", "launch.py", "serve.py"}
    assert all(_lines(p) <= 420 for p in modules), {p.name: _lines(p) for p in modules}


def test_the_gemm_spec_pins_every_module_it_imports() -> None:
    text = (GEMM / "spec.py").read_text()
    found = re.search(r"^MODULES = (\{.*\})$", text, re.M)
    assert found, "kernels/triton_gemm/spec.py has no MODULES pin"
    pinned = ast.literal_eval(found.group(1))
    assert set(pinned) == {p.stem for p in GEMM.glob("*.py")} - {"spec", "__init__"}
    for name, digest in pinned.items():
        assert hashlib.sha256((GEMM / f"{name}.py").read_bytes()).hexdigest()[:16] == digest, (
            f"kernels/triton_gemm/{name}.py changed: update its pin in spec.py"
        )


# The HIP port takes the CUDA example's host side and kernel body by path: the one reach across examples left.
SHARED_ACROSS_EXAMPLES = {("hip_reduction", "cuda_reduction")}


def test_no_spec_loads_a_file_of_another_example() -> None:
    examples = {p.name for p in (ROOT / "examples").iterdir() if p.is_dir()}
    for spec in sorted((ROOT / "examples").glob("*/spec.py")) + sorted((ROOT / "kernels").glob("*/*.py")):
        text = spec.read_text()
        assert "parent.parent" not in text and '"examples" /' not in text, f"{spec} builds a path to another folder"
        for other in examples - {spec.parent.name} - {o for s, o in SHARED_ACROSS_EXAMPLES if s == spec.parent.name}:
            assert f'/ "{other}"' not in text and f'"examples/{other}' not in text, f"{spec} loads a file of {other}"
