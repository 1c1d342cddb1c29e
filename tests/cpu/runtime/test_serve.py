"""``kerntune run``: a table served to a program written for torch, not for kerntune, on the CPU (Triton's
interpreter runs the tuned kernel; the CPU dispatch key is served). Per call: an exact entry runs the spec's
kernel, anything else the library's own; every bad input is a counted library call, never a crash."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, EXAMPLES, KERNELS, CliResult, has_gpu

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(has_gpu(), reason="serves the CPU dispatch key under the interpreter")

APP = DATA / "served" / "linear_app.py"
SPEC = KERNELS / "triton_gemm"
PLAIN = {
    "BLOCK_M": 32,
    "BLOCK_N": 64,
    "BLOCK_K": 32,
    "GROUP_M": 8,
    "SPLIT_K": 1,
    "FUSED": 0,
    "TMA": 0,
    "PERSISTENT": 0,
    "num_warps": 4,
    "num_stages": 2,
}


def _table(path: Path, *, device: dict[str, Any] | None = None, bias_config: dict[str, Any] | None = None) -> Path:
    """A table as ``kerntune deploy`` writes it for the app's two Linear layers (a run on the interpreter claims
    no timing, so deploy would refuse it: the entries are written here, keyed the same way)."""
    from kerntune.runtime.keys import problem_source_hash
    from kerntune.runtime.serving import cpu_device_fields, load_served_spec

    problem = load_served_spec(SPEC)
    fixed = {
        "op": problem.name,
        "source": problem_source_hash(problem),
        "dtype": "float16",
        **(device or cpu_device_fields()),
    }
    entries = [
        {"key": {**fixed, "M": 32, "N": 64, "K": 64, "layout": "NT", "bias": 1}, "config": bias_config or PLAIN},
        {
            "key": {**fixed, "M": 32, "N": 128, "K": 64, "layout": "NT", "bias": 0},
            "config": {**PLAIN, "SPLIT_K": 2, "BLOCK_N": 128},
        },  # split-K with its reduction kernel (one output tile: it underfills any device)
    ]
    table = {
        "schema": 1,
        "provenance": {},
        "validators": {},
        "device": {},
        "entries": [{**e, "status": "measured", "spec": str(SPEC)} for e in entries],
    }
    path.write_text(json.dumps(table))
    return path


def _served(
    kerntune: Callable[..., CliResult], table: Path, out: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[CliResult, dict[str, Any]]:
    """``kerntune run`` of the app under the interpreter (``--spec-dir examples`` unless ``extra`` names specs) and
    the counts its serving wrote."""
    done = kerntune(
        "run",
        "--table",
        str(table),
        "--backend",
        "CPU",
        *(extra or ("--spec-dir", str(KERNELS), "--spec-dir", str(EXAMPLES))),
        "--",
        "python",
        str(APP),
        env={"TRITON_INTERPRET": "1", "KERNTUNE_VERIFY_OUT": str(out), **(env or {})},
    )
    counts = [json.loads(p.read_text()) for p in out.glob("serve-*.json")]
    return done, counts[0] if counts else {}


def test_each_covered_call_runs_the_tuned_kernel_and_every_other_the_library(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    done, counts = _served(kerntune, _table(tmp_path / "t.json"), tmp_path / "out")
    assert done.code == 0, done.stderr  # the app checked every output against float64
    ops = counts["ops"]
    assert ops["aten::addmm"] == {"served": 3, "library": 0, "failed": 0}  # Linear with a bias: layout NT
    # Linear without a bias served; the library ran torch.mm (no entry: a counted miss) and the app's float64
    # checks (a dtype the spec does not take), 3 + 9 calls.
    assert ops["aten::mm"] == {"served": 3, "library": 12, "failed": 0}
    stats = counts["specs"]["triton_matmul"]
    assert stats["exact"] == 6 and stats["default"] == 3 and len(stats["missed_keys"]) == 1
    (missed,) = stats["missed_keys"]
    assert '"layout":"NN"' in missed.replace(" ", "") or 'layout="NN"' in missed
    reports = [r for p in (tmp_path / "out").glob("dispatch-*.json") for r in json.loads(p.read_text())]
    assert [r["name"] for r in reports] == ["matmul"]  # what verify reads, as for any Dispatcher


def test_bad_tables_and_failing_kernels_run_the_library(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    elsewhere = _table(
        tmp_path / "other.json", device={"arch": "sm_90", "compute_units": 132, "device_name": "NVIDIA H200"}
    )
    done, counts = _served(kerntune, elsewhere, tmp_path / "a")
    assert done.code == 0, done.stderr
    assert counts["ops"]["aten::addmm"] == {"served": 0, "library": 3, "failed": 0}  # counted misses

    done, counts = _served(
        kerntune, _table(tmp_path / "t.json"), tmp_path / "p", "--mode", "production", "--spec", str(SPEC)
    )
    assert done.code == 0, done.stderr
    assert counts["ops"]["aten::addmm"]["served"] == 0  # fail closed: the entries are measured, not admitted

    marked = _table(tmp_path / "marked.json")  # deploy marked the bias entry: the library beat its winner
    data = json.loads(marked.read_text())
    data["entries"][0]["library_faster"] = {"ratio": 1.05, "why": "the winner is not faster than torch.matmul"}
    marked.write_text(json.dumps(data))
    done, counts = _served(kerntune, marked, tmp_path / "m")
    assert done.code == 0, done.stderr
    assert counts["ops"]["aten::addmm"] == {"served": 0, "library": 3, "failed": 0}  # left to the library
    assert counts["ops"]["aten::mm"]["served"] == 3 and len(counts["left_to_library"]) == 1

    failing = tmp_path / "failing_spec.py"  # the same spec (name and kernel source) whose launches raise
    failing.write_text(
        "import dataclasses, importlib.util\n"
        f"found = importlib.util.spec_from_file_location('matmul_spec', {str(SPEC / 'spec.py')!r})\n"
        "module = importlib.util.module_from_spec(found)\n"
        "found.loader.exec_module(module)\n"
        "def fail(op, shape, config, args, kwargs):\n"
        "    raise RuntimeError('a planted launch failure')\n"
        "serve = dataclasses.replace(module.problem.serve, run=fail, prepare=None)\n"
        "problem = dataclasses.replace(module.problem, serve=serve)\n"
    )
    done, counts = _served(kerntune, _table(tmp_path / "f.json"), tmp_path / "b", "--spec", str(failing))
    assert done.code == 0, done.stderr  # the outputs are still right: the library ran the failed calls
    assert counts["ops"]["aten::addmm"] == {"served": 0, "library": 2, "failed": 1}  # failed once, then library
    assert counts["ops"]["aten::mm"]["failed"] == 1 and counts["ops"]["aten::mm"]["served"] == 0
    assert done.stderr.count("failed at") == 2, done.stderr  # once per key

    unreadable = tmp_path / "unreadable.json"
    unreadable.write_text('{"schema": 1, "entries": [')
    done, counts = _served(kerntune, unreadable, tmp_path / "c", "--spec", str(SPEC))
    assert done.code == 0, done.stderr
    assert done.stderr.count("not valid JSON") == 1, done.stderr  # one warning
    assert counts["disabled"] and counts["ops"]["aten::mm"] == {"served": 0, "library": 15, "failed": 0}

    missing = kerntune("run", "--table", str(tmp_path / "t.json"), "--", "ls")
    assert missing.code == 2 and "python SCRIPT.py" in missing.stderr


def test_serving_holds_without_its_result_kept_and_close_removes_it(tmp_path: Path) -> None:
    import gc

    import torch

    from kerntune.runtime import serving

    table = _table(tmp_path / "t.json")
    serving.serve(table, backend="CPU", specs=[SPEC])  # as a program's first line would: the result not kept
    gc.collect()  # torch drops a collected Library's registrations; serve keeps it
    installed = serving._ACTIVE[-1]
    with pytest.raises(ValueError, match="already served in this process; close"):
        serving.serve(table, backend="CPU")  # one serving decides each call (torch 2.11 refuses a second override)
    x = torch.randn(8, 64).half()
    torch.mm(x, torch.randn(16, 64).half().t())  # no entry for this shape: through the override to the library
    assert installed.counts["aten::mm"]["library"] == 1
    installed.close()
    torch.mm(x, torch.randn(16, 64).half().t())
    assert installed.counts["aten::mm"]["library"] == 1 and installed not in serving._ACTIVE
    serving.serve(table, backend="CPU", specs=[SPEC]).close()  # closed, another may be served


def test_serving_that_cannot_start_still_runs_the_program(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    done = kerntune("run", "--table", str(_table(tmp_path / "t.json")), "--", "python", str(APP))  # CUDA, no GPU
    assert done.code == 0, done.stderr
    assert "the table is not served" in done.stderr and "max relative error" in done.stdout


def test_batched_products_are_served_by_the_bmm_spec(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    from kerntune.runtime.keys import problem_source_hash
    from kerntune.runtime.serving import cpu_device_fields, load_served_spec

    spec_path = EXAMPLES / "triton_bmm"
    problem = load_served_spec(spec_path)
    key = {
        "op": problem.name,
        "source": problem_source_hash(problem),
        "dtype": "float16",
        **cpu_device_fields(),
        "B": 4,
        "M": 16,
        "N": 32,
        "K": 64,
        "layout": "NT",
    }
    table = tmp_path / "bmm.json"
    table.write_text(
        json.dumps(
            {
                "schema": 1,
                "validators": {},
                "entries": [
                    {
                        "key": key,
                        "config": {**PLAIN, "BLOCK_M": 16, "BLOCK_N": 32},  # within BLOCK_M <= M at M=16
                        "status": "measured",
                        "spec": str(spec_path),
                    }
                ],
            }
        )
    )
    out = tmp_path / "out"
    done = kerntune(
        "run",
        "--table",
        str(table),
        "--backend",
        "CPU",
        "--spec-dir",
        str(EXAMPLES),
        "--",
        "python",
        str(DATA / "served" / "bmm_app.py"),
        env={"TRITON_INTERPRET": "1", "KERNTUNE_VERIFY_OUT": str(out)},
    )
    assert done.code == 0, done.stderr  # the app checked each product in float64
    (counts,) = [json.loads(p.read_text()) for p in out.glob("serve-*.json")]
    assert counts["ops"]["aten::bmm"]["served"] == 3  # q @ kᵀ, layout NT; the float64 checks run the library
    assert counts["ops"]["aten::bmm"]["library"] == 3 and counts["ops"]["aten::bmm"]["failed"] == 0
