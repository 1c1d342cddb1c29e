"""`kerntune verify`, `admit` and `scope` on a live PoCL program (examples/opencl_vector_add/live.py) that reads
a deployed table through kerntune.runtime.Dispatcher."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.runtime.corpus import read_corpus
from tests.conftest import EXAMPLES, KERNELS, CliResult

pytest.importorskip("pyopencl")
pytest.importorskip("torch")

FAST = {
    "KERNTUNE_CONFIRM_ROUNDS": "0",
    "KERNTUNE_WARMUP_MS": "20",
    "KERNTUNE_SAMPLE_BUDGET_MS": "80",
    "KERNTUNE_MIN_SAMPLES": "5",
}
LIVE = str(EXAMPLES / "opencl_vector_add" / "live.py")


def _deployed(kerntune: Callable[..., CliResult], path: Path) -> dict[str, object]:
    tuned = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shape",
        "N=65536",
        "--shape",
        "N=262144",
        "--strategy",
        "exhaustive",
        env=FAST,
    )
    assert tuned.code == 0, tuned.stderr
    assert kerntune("deploy", "last", "--table", str(path)).code == 0
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_verify_sees_every_entry_engage_then_admit_ranks_them(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    table = tmp_path / "table.json"
    _deployed(kerntune, table)
    report = tmp_path / "verify.json"
    seen = kerntune(
        "verify",
        "--processes",
        "2",
        "--report",
        str(report),
        "--json",
        "--",
        sys.executable,
        LIVE,
        str(table),
        "--sizes",
        "65536,262144,4096",
        "--reps",
        "20",
    )
    assert seen.code == 0, seen.stderr
    assert "engagement: 2 of 2 entries engaged" in seen.stderr  # said before the A/B began
    data = seen.json()
    assert [e["engaged"] for e in data["entries"]] == [True, True] and data["never_engaged"] == []
    assert all(e["kernel"] == "vector_add" and e["calls"] == 21 for e in data["entries"])  # warm-up + 20 passes
    assert data["calls"] == 63 and data["exact_calls"] == 42 and data["hit_rate"] == pytest.approx(2 / 3)
    (miss,) = data["misses"]
    assert '"N=4096' not in miss["key"] and "N=4096" in miss["key"] and miss["decision"] == "default"
    assert data["gpu"] is False and data["device_share"] is None  # PoCL: no device kernels in torch's profiler
    e2e = data["end_to_end"]
    assert e2e["verdict"] in ("win", "loss", "noise") and e2e["ci"][0] <= e2e["ratio"] <= e2e["ci"][1]

    admitted = kerntune("admit", str(table), "--verified", str(report), "--json")
    assert admitted.code == 0, admitted.stderr
    rows = admitted.json()["entries"]
    assert all(r["gated"] and r["engaged"] for r in rows)
    for r in rows:  # admitted exactly when the entry beat the default by more than 2%
        assert r["status"] == ("admitted" if r["won"] else "measured"), r
    written = json.loads(table.read_text())
    assert [e["status"] for e in written["entries"]] == [r["status"] for r in rows]


def test_a_table_keyed_to_another_compute_unit_count_serves_nothing_and_says_so(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    table = tmp_path / "table.json"
    data = _deployed(kerntune, table)
    for entry in data["entries"]:  # type: ignore[attr-defined]
        entry["key"]["compute_units"] += 1
    table.write_text(json.dumps(data))
    seen = kerntune("verify", "--no-ab", "--json", "--", sys.executable, LIVE, str(table), "--reps", "3")
    assert seen.code == 0, seen.stderr  # a table that served nothing is said, with its counts: not a failure
    found = seen.json()
    assert len(found["never_engaged"]) == 2 and found["exact_calls"] == 0
    assert f"none of the {found['calls']} calls matched" in found["serves_nothing"]
    assert len(found["misses"]) == 2 and all(m["decision"] == "default" for m in found["misses"])
    nothing = kerntune("verify", "--no-ab", "--", sys.executable, "-c", "print(1)")
    assert nothing.code == 2


def test_scope_reads_gemm_layouts_in_a_marked_window_and_its_corpus_tunes(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    program = tmp_path / "mm.py"
    program.write_text(
        "import torch\nfrom torch.profiler import record_function\n"
        "x = torch.randn(16, 64).half()\nlin = torch.nn.Linear(64, 32).half()\nw = torch.randn(64, 32).half()\n"
        "y = x @ w  # before the window: not counted\n"
        "for _ in range(3):\n    with record_function('step'):\n        y = lin(x) + x @ w\nprint(float(y.sum()))\n"
    )
    corpus = tmp_path / "corpus.jsonl"
    found = kerntune("scope", "--region", "step", "--corpus", str(corpus), "--json", "--", sys.executable, str(program))
    assert found.code == 0, found.stderr
    data = found.json()
    assert data["window"]["spans"] == 3 and "ranges named 'step'" in data["window"]["describe"]
    gemms = {(g["op"], g["layout"], g["bias"]): g for g in data["gemms"]}
    assert gemms[("aten::addmm", "NT", 1)]["shape"] == {"M": 16, "N": 32, "K": 64}  # nn.Linear: W.t(), a bias
    assert gemms[("aten::mm", "NN", 0)]["calls"] == 3  # the one before the window is left out
    assert all(g["dtype"] == "float16" for g in data["gemms"])
    assert {(line.op, line.layout) for line in read_corpus(corpus)} == {("aten::addmm", "NT"), ("aten::mm", "NN")}
    pytest.importorskip("triton")
    tuned = kerntune(
        "tune",
        str(KERNELS / "triton_gemm"),
        "--shapes-from",
        str(corpus),
        "--dtype",
        "float16",
        "--strategy",
        "random",
        "--budget",
        "2",
        "--json",
    )
    assert tuned.code == 0, tuned.stderr  # the corpus scope wrote, as written
    assert sorted((s["shape"]["layout"], s["shape"]["bias"]) for s in tuned.json()["shapes"]) == [("NN", 0), ("NT", 1)]
    wrong = kerntune("scope", "--", "ls", "-l")
    assert wrong.code == 2 and "take Python programs" in wrong.stderr
    unmarked = kerntune("scope", "--region", "nowhere", "--", sys.executable, str(program))
    assert unmarked.code == 2 and "record_function('nowhere')" in unmarked.stderr


def test_the_transformer_demo_reports_its_dispatchers_without_a_table(kerntune: Callable[..., CliResult]) -> None:
    pytest.importorskip("triton")
    demo = str(EXAMPLES / "transformer_mlp" / "run.py")
    seen = kerntune(
        "verify",
        "--no-ab",
        "--json",
        "--",
        sys.executable,
        demo,
        "--device",
        "cpu",
        "--dtype",
        "float16",
        "--tokens",
        "4",
        "--dim",
        "64",
        "--hidden",
        "128",
        "--steps",
        "2",
        env={"TRITON_INTERPRET": "1"},
    )
    assert seen.code == 0, seen.stderr
    data = seen.json()
    assert data["kernels"] == ["matmul", "rmsnorm"] and data["entries"] == [] and data["exact_calls"] == 0
    assert data["calls"] == 3 * 3 + 3  # three matmuls and one RMSNorm per forward pass, three passes
    assert {m["key"].split("K=")[1].split(";")[0] for m in data["misses"] if m["kernel"] == "matmul"} == {"64", "128"}
    assert all("cannot read dispatch table" in d["reason"] for d in data["disabled"])
