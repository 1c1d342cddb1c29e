"""Where specs live: examples/ holds short teaching specs, kernels/ the product families. Each module stays small,
the product GEMM's spec pins the modules its digest does not cover, and no file of an example (its spec, a program
or a helper) loads a file of another example."""

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


def _reaches(text: str, other: str) -> list[str]:
    """The ways ``text`` names a file of the example folder ``other``: a path built to it (``/ "other"``, as after
    ``parents[1]``), or a path string into it (``"examples/other...``, as ``_spec("examples/other")`` takes)."""
    ways = [f"/ {q}{other}{q}" for q in "\"'"] + [f"{q}{lead}{other}" for q in "\"'" for lead in ("examples/", "../")]
    return [way for way in ways if way in text]


def test_no_file_of_an_example_loads_a_file_of_another() -> None:
    examples = {p.name for p in (ROOT / "examples").iterdir() if p.is_dir()}
    files = sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "kernels").rglob("*.py"))
    assert len(files) > len(examples)  # every module, not only each example's spec.py
    reached = []
    for path in files:
        where = path.relative_to(ROOT).parts
        own = where[1] if where[0] == "examples" else None
        text = path.read_text()
        # One level up from an example is examples/ itself: the only reason to go there is another example.
        ups = ["parent.parent", "parents[1]", '"examples" /'] if own else ["parent.parent", '"examples" /']
        reached += [f"{'/'.join(where)}: {up}" for up in ups if up in text]
        for other in sorted(examples - {own}):
            reached += [f"{'/'.join(where)} loads {other} by {way}" for way in _reaches(text, other)]
    assert not reached, reached


def test_the_reach_check_sees_each_way_of_loading_another_example() -> None:
    for text in (
        'Path(__file__).resolve().parents[1] / "cuda_reduction" / "spec.py"',
        'MM, RMS = _spec("kernels/triton_gemm"), _spec("examples/triton_rmsnorm")',
        "load('examples/cuda_reduction/spec.py')",
        'sys.path.insert(0, "../cuda_reduction")',
    ):
        assert _reaches(text, "cuda_reduction") or _reaches(text, "triton_rmsnorm"), text
    assert not _reaches('_spec("kernels/triton_gemm")  # see examples/cuda_reduction in prose', "cuda_reduction")


def test_the_hip_port_keeps_the_cuda_kernel_word_for_word() -> None:
    """examples/hip_reduction copies the CUDA example's kernel after its own wavefront sum: the two stay one kernel."""

    def kernel(example: str) -> str:
        text = (ROOT / "examples" / example / "spec.py").read_text()
        return text[text.index('extern "C" __global__') : text.index('"""', text.index('extern "C" __global__'))]

    assert kernel("hip_reduction") == kernel("cuda_reduction")
