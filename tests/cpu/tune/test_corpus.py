"""The offline loop, TunableOp's way, on PoCL: the live program records the shapes its table misses
(``KERNTUNE_RECORD_UNTUNED``), ``kerntune tune --shapes-from`` tunes the distinct ones of this spec, ``deploy``
writes the table, and the program then hits it on every call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, CliResult

pytest.importorskip("pyopencl")

FAST = {"KERNTUNE_CONFIRM_ROUNDS": "0", "KERNTUNE_WARMUP_MS": "20", "KERNTUNE_SAMPLE_BUDGET_MS": "80",
        "KERNTUNE_MIN_SAMPLES": "5"}
LIVE = str(EXAMPLES / "opencl_vector_add" / "live.py")


def _live(table: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, LIVE, str(table), "--sizes", "65536,262144,65536", "--reps", "2"],
                          capture_output=True, text=True, check=True, env={**os.environ, **env})


def test_record_tune_deploy_and_hit(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    corpus, table = tmp_path / "shapes.jsonl", tmp_path / "table.json"
    _live(tmp_path / "none.json", KERNTUNE_RECORD_UNTUNED=str(corpus))
    _live(tmp_path / "none.json", KERNTUNE_RECORD_UNTUNED=str(corpus))  # a second process records them again
    recorded = [json.loads(line)["key"] for line in corpus.read_text().splitlines()]
    assert sorted(k["N"] for k in recorded) == [65536, 65536, 262144, 262144]  # once per process and key
    with corpus.open("a") as handle:  # what a shared corpus also holds: other ops, an older kernel source
        handle.write(json.dumps({"key": {**recorded[0], "op": "triton_matmul"}}) + "\n")
        handle.write(json.dumps({"key": {**recorded[0], "N": 4096, "source": "0123456789abcdef"}}) + "\n")
    tuned = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shapes-from", str(corpus), "--budget", "3",
                     "--json", env=FAST)
    assert tuned.code == 0, tuned.stderr
    assert [s["shape"] for s in tuned.json()["shapes"]] == [{"N": 65536}, {"N": 262144}]  # distinct, in order
    assert kerntune("deploy", "last", "--table", str(table)).code == 0
    hits = _live(table, KERNTUNE_LOG_DISPATCH="1").stderr
    assert hits.count("-> exact") == 2 and "-> default" not in hits, hits

    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text(json.dumps({"key": {**recorded[0], "op": "triton_matmul"}}) + "\n")
    refused = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shapes-from", str(foreign))
    assert refused.code == 2 and "no shape of opencl_vector_add" in refused.stderr and "1 of another op" in \
        refused.stderr
    foreign.write_text("not json\n")
    garbled = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shapes-from", str(foreign))
    assert garbled.code == 2 and "line 1 is not a recorded key" in garbled.stderr
