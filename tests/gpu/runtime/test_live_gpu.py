"""The live path on a real GPU: the transformer demo's matmuls and RMSNorm tuned, deployed into one table, and
`kerntune verify` showing every entry engaged (with the kernels the profiler saw and the end-to-end A/B); the
same table keyed to another SM count misses, and verify says it served nothing. Figures are printed for
benchmarks/live-path/history.md."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, KERNELS, CliResult, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]

QUICK = {"KERNTUNE_CONFIRM_ROUNDS": "0"}


def test_the_demo_engages_every_deployed_entry_and_a_foreign_table_misses(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    table = tmp_path / "table.json"
    for spec, shapes, budget in (
        (KERNELS / "triton_gemm", ["M=16,N=14336,K=4096", "M=16,N=4096,K=14336"], "12s/shape"),
        (KERNELS / "triton_rmsnorm", ["M=16,N=4096"], "6s/shape"),
    ):
        args = [a for s in shapes for a in ("--shape", s)]
        tuned = kerntune("tune", str(spec), "--dtype", "bfloat16", *args, "--budget", budget, env=QUICK)
        assert tuned.code == 0, tuned.stderr
        assert kerntune("deploy", "last", "--table", str(table)).code == 0
    demo = [sys.executable, str(EXAMPLES / "transformer_mlp" / "run.py"), "--steps", "200", "--table", str(table)]
    seen = kerntune("verify", "--processes", "3", "--json", "--", *demo)
    assert seen.code == 0, seen.stderr
    data = seen.json()
    print(json.dumps({k: v for k, v in data.items() if k != "misses"}))
    assert len(data["entries"]) == 3 and data["never_engaged"] == [] and data["hit_rate"] == 1.0
    by_kernel = {e["kernel"]: e for e in data["entries"]}
    assert set(by_kernel) == {"matmul", "rmsnorm"}
    assert all(e["profiled_launches"] and e["profiled_launches"] >= e["calls"] for e in data["entries"])
    assert 0 < data["device_share"] <= 1 and data["end_to_end"]["verdict"] in ("win", "loss", "noise")

    foreign = json.loads(table.read_text())
    for entry in foreign["entries"]:
        entry["key"]["compute_units"] += 2
    wrong = tmp_path / "wrong_sm.json"
    wrong.write_text(json.dumps(foreign))
    missed = kerntune("verify", "--no-ab", "--json", "--", *demo[:-1], str(wrong))
    assert missed.code == 0, missed.stderr  # a table that serves nothing is a finding, said with the counts
    found = missed.json()
    assert "served no call" in found["serves_nothing"], found["serves_nothing"]
    print(json.dumps({"never_engaged": found["never_engaged"], "misses": found["misses"]}))
    assert len(found["never_engaged"]) == 3 and found["exact_calls"] == 0
    assert {m["decision"] for m in found["misses"]} == {"default"} and len(found["misses"]) == 3
