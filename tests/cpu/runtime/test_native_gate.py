"""The native gate on the CPU: ``serve(backend="CPU")`` registers its C++ kernel for the served operators (built
here with torch's C++ compiler, once per cache folder), Triton's interpreter runs the served kernel. A miss runs
the library's kernel from C++ and is counted; a served form calls the Python served kernel; a gate that cannot be
built leaves the Python path, warned once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, has_gpu
from tests.cpu.runtime.test_serve import SPEC, _table

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(has_gpu(), reason="serves the CPU dispatch key under the interpreter")

PROGRAM = """
import json, sys
import torch
from kerntune.runtime.serving import load_served_spec, serve

torch.manual_seed(0)
serving = serve(sys.argv[1], backend="CPU", specs=[sys.argv[2]])
x, w, bias = torch.randn(32, 64).half(), torch.randn(64, 64).half(), torch.randn(64).half()
w128 = torch.randn(128, 64).half()
missed = [torch.mm(x, w) for _ in range(5)]  # layout NN: no entry
served = [torch.addmm(bias, x, w.t()) for _ in range(3)]  # layout NT with a bias: the table's first entry
out = torch.empty(32, 128).half()
given = torch.mm(x, w128.t(), out=out)  # the .out form of the second entry's key
stats = serving.stats()
forms = len(serving.native.forms) if serving.native is not None else None
serving.close()
spec = load_served_spec(sys.argv[2])
config = json.load(open(sys.argv[1]))["entries"][0]["config"]
shape = {"M": 32, "N": 64, "K": 64, "layout": "NT", "bias": 1}
try:
    direct = spec.serve.run("aten::addmm", shape, config, (bias, x, w.t()), {})
    hit_is_served_kernel = all(torch.equal(s, direct) for s in served)
except Exception:  # a config the kernel cannot launch: no served result to compare
    hit_is_served_kernel = None
print(json.dumps({
    "stats": stats,
    "forms": forms,
    "miss_is_library": all(torch.equal(m, torch.mm(x, w)) for m in missed),
    "hit_is_served_kernel": hit_is_served_kernel,
    "served_right": max(
        float((s.double() - (x.double() @ w.double().t() + bias.double())).abs().max()) for s in served
    ),
    "out_given_back": given.data_ptr() == out.data_ptr(),
    "out_right": float((out.double() - x.double() @ w128.double().t()).abs().max()),
}))
"""


def _run(table: Path, spec: Path = SPEC, **env: str) -> tuple[dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(table), str(spec)],
        capture_output=True,
        text=True,
        env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT / "src"), **env},
        cwd=ROOT,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_a_miss_runs_the_library_from_cpp_and_a_hit_the_served_kernel(tmp_path: Path) -> None:
    result, stderr = _run(_table(tmp_path / "t.json"))
    stats = result["stats"]
    assert stats["gate"] == "native", stderr
    assert result["miss_is_library"] and result["hit_is_served_kernel"]
    assert result["out_given_back"] and result["out_right"] < 0.05
    assert stats["ops"]["aten::mm"] == {"served": 0, "library": 5, "failed": 0}
    assert stats["ops"]["aten::addmm"] == {"served": 3, "library": 0, "failed": 0}
    assert stats["ops"]["aten::mm.out"] == {"served": 1, "library": 0, "failed": 0}
    # Three forms (the miss, the hit, the .out hit), each decided by Python once: the miss's four later calls
    # were counted in C++ and handed to the dispatcher, whose counts are per call as on the Python path.
    assert result["forms"] == 3
    assert stats["planned_forms"] == 0  # no CUDA driver here: every served form calls the Python served kernel
    assert stats["plan_checks"] == 0
    spec = stats["specs"]["triton_matmul"]
    assert spec["default"] == 5 and spec["exact"] == 4
    assert list(spec["missed_keys"].values()) == [5]


def test_a_gate_that_cannot_be_built_leaves_the_python_path_with_one_warning(tmp_path: Path) -> None:
    table = _table(tmp_path / "t.json")
    cache = str(tmp_path / "cache")  # empty: nothing built before
    result, stderr = _run(table, CXX=str(tmp_path / "no-such-compiler"), KERNTUNE_NATIVE_CACHE=cache)
    assert result["stats"]["gate"] == "python" and result["forms"] is None
    assert result["stats"]["planned_forms"] is None  # no C++ gate, so no plan to count
    assert result["stats"]["plan_checks"] is None
    assert stderr.count("the native gate was not built") == 1, stderr
    assert result["stats"]["ops"]["aten::addmm"] == {"served": 3, "library": 0, "failed": 0}
    assert result["stats"]["ops"]["aten::mm"] == {"served": 0, "library": 5, "failed": 0}
    assert result["miss_is_library"] and result["hit_is_served_kernel"]

    result, stderr = _run(table, KERNTUNE_NATIVE_GATE="off")  # turned off: the Python path, nothing warned
    assert result["stats"]["gate"] == "python" and "native gate" not in stderr
    assert result["stats"]["ops"]["aten::addmm"]["served"] == 3


def test_a_served_kernel_that_fails_is_counted_once_and_its_form_decided_again(tmp_path: Path) -> None:
    failing = tmp_path / "failing_spec.py"  # the same spec (name and kernel source) whose addmm launches raise
    failing.write_text(
        "import dataclasses, importlib.util\n"
        f"found = importlib.util.spec_from_file_location('matmul_spec', {str(SPEC / 'spec.py')!r})\n"
        "module = importlib.util.module_from_spec(found)\n"
        "found.loader.exec_module(module)\n"
        "original = module.problem.serve\n"
        "def prepare(op, shape, config):\n"
        "    if op.startswith('aten::addmm'):\n"
        "        raise RuntimeError('a planted launch failure')\n"
        "    return original.prepare(op, shape, config)\n"
        "serve = dataclasses.replace(original, prepare=prepare)\n"
        "problem = dataclasses.replace(module.problem, serve=serve)\n"
    )
    result, stderr = _run(_table(tmp_path / "broken.json"), failing)
    stats = result["stats"]
    assert stats["gate"] == "native"
    assert stats["ops"]["aten::addmm"] == {"served": 0, "library": 2, "failed": 1}
    assert stderr.count("failed at") == 1, stderr
    assert stats["ops"]["aten::mm.out"]["served"] == 1  # the other entry is unaffected
    assert result["served_right"] < 0.05  # the library ran the failed calls
