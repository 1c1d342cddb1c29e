"""The offline loop, TunableOp's way, on PoCL: the live program records the shapes its table misses
(``KERNTUNE_RECORD_UNTUNED``), ``kerntune tune --shapes-from`` tunes the distinct ones of this spec, ``deploy``
writes the table, and the program then hits it on every call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from kerntune.runtime.corpus import append_corpus, read_corpus
from tests.conftest import EXAMPLES, CliResult

pytest.importorskip("pyopencl")

FAST = {
    "KERNTUNE_CONFIRM_ROUNDS": "0",
    "KERNTUNE_WARMUP_MS": "20",
    "KERNTUNE_SAMPLE_BUDGET_MS": "80",
    "KERNTUNE_MIN_SAMPLES": "5",
}
LIVE = str(EXAMPLES / "opencl_vector_add" / "live.py")


def _live(table: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, LIVE, str(table), "--sizes", "65536,262144,65536", "--reps", "2"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )


def test_record_tune_deploy_and_hit(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    corpus, table = tmp_path / "shapes.jsonl", tmp_path / "table.json"
    _live(tmp_path / "none.json", KERNTUNE_RECORD_UNTUNED=str(corpus))
    _live(tmp_path / "none.json", KERNTUNE_RECORD_UNTUNED=str(corpus))  # a second process records them again
    recorded = read_corpus(corpus)
    # Once per process and key, with the calls it made: 65536 twice a pass, 262144 once; a warm-up and two reps.
    assert sorted((line.shape["N"], line.calls) for line in recorded) == [
        (65536, 6),
        (65536, 6),
        (262144, 3),
        (262144, 3),
    ]
    assert {line.op for line in recorded} == {"opencl_vector_add"} and all(line.source for line in recorded)
    append_corpus(
        corpus,
        [  # what a shared corpus also holds: other ops, an older kernel source, the older form
            replace(recorded[0], op="triton_matmul"),
            replace(recorded[0], shape={"N": 4096}, source="0123456789abcdef"),
        ],
    )
    with corpus.open("a") as handle:
        handle.write(json.dumps({"key": {"op": "opencl_vector_add", "N": 1024}, "decision": "default"}) + "\n")
    tuned = kerntune(
        "tune", str(EXAMPLES / "opencl_vector_add"), "--shapes-from", str(corpus), "--budget", "3", "--json", env=FAST
    )
    assert tuned.code == 0, tuned.stderr
    # Distinct, in first-seen order.
    assert [s["shape"] for s in tuned.json()["shapes"]] == [{"N": 65536}, {"N": 262144}, {"N": 1024}]
    assert kerntune("deploy", "last", "--table", str(table)).code == 0
    hits = _live(table, KERNTUNE_LOG_DISPATCH="1").stderr
    assert hits.count("-> exact") == 2 and "-> default" not in hits, hits
    topped = kerntune(
        "tune",
        str(EXAMPLES / "opencl_vector_add"),
        "--shapes-from",
        str(corpus),
        "--top",
        "1",
        "--budget",
        "2",
        "--json",
        env=FAST,
    )
    assert topped.code == 0, topped.stderr
    assert [s["shape"] for s in topped.json()["shapes"]] == [{"N": 65536}]  # no device times: the most calls

    foreign = tmp_path / "foreign.jsonl"
    append_corpus(foreign, [replace(recorded[0], op="triton_matmul")])
    refused = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shapes-from", str(foreign))
    assert (
        refused.code == 2 and "no shape of opencl_vector_add" in refused.stderr and "1 of another op" in refused.stderr
    )
    foreign.write_text("not json\n")
    garbled = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shapes-from", str(foreign))
    assert garbled.code == 2 and "line 1 is not JSON" in garbled.stderr
