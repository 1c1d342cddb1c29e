"""``kerntune run`` on a real GPU: examples/hf_llama (transformers, unmodified; a small config) served a table keyed
from its own scope corpus, eager, under ``torch.compile`` and under CUDA graphs (``reduce-overhead``): the logits
agree with the table-less run (the app's ``--check`` inside ``kerntune verify``'s profiled run), every covered call
runs the tuned kernel and the profiler sees it, none fails; a table for another device misses. Figures are
printed. Three program runs per mode (scope, the table-less reference, verify): compiled modes compile each time."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.runtime.corpus import read_corpus
from tests.conftest import EXAMPLES, KERNELS, CliResult, has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA or ROCm GPU")]
pytest.importorskip("transformers")

APP = str(EXAMPLES / "hf_llama" / "app.py")
SMALL = [
    "--layers",
    "2",
    "--hidden",
    "512",
    "--intermediate",
    "1024",
    "--heads",
    "8",
    "--kv-heads",
    "2",
    "--vocab",
    "1024",
    "--batch",
    "16",
    "--steps",
    "5",
    "--warmup",
    "3",
]
CONFIG = {
    "BLOCK_M": 16,
    "BLOCK_N": 64,
    "BLOCK_K": 64,
    "GROUP_M": 8,
    "SPLIT_K": 1,
    "FUSED": 0,
    "TMA": 0,
    "PERSISTENT": 0,
    "num_warps": 4,
    "num_stages": 3,
}


def _table(lines: list, path: Path, compute_units: int | None = None) -> Path:
    from kerntune.runtime.keys import problem_source_hash, torch_device_fields
    from kerntune.runtime.serving import load_served_spec

    spec = load_served_spec(KERNELS / "triton_gemm")
    device = torch_device_fields()
    if compute_units is not None:
        device["compute_units"] = compute_units
    fixed = {"op": spec.name, "source": problem_source_hash(spec), "dtype": "bfloat16", **device}
    entries = [
        {
            "key": {**fixed, **line.shape, "layout": line.layout, "bias": line.bias},
            "config": CONFIG,
            "status": "measured",
            "spec": str(KERNELS / "triton_gemm"),
        }
        for line in lines
    ]
    path.write_text(json.dumps({"schema": 1, "validators": {}, "entries": entries}))
    return path


@pytest.mark.parametrize("compiled", ["none", "default", "reduce-overhead"])
def test_an_unmodified_llama_is_served_eager_compiled_and_in_cuda_graphs(
    kerntune: Callable[..., CliResult], tmp_path: Path, compiled: str
) -> None:
    args = [*SMALL, "--compile", compiled]
    corpus = tmp_path / "c.jsonl"
    scoped = kerntune("scope", "--region", "step", "--corpus", str(corpus), "--json", "--", sys.executable, APP, *args)
    assert scoped.code == 0, scoped.stderr
    found = scoped.json()
    print(
        json.dumps(
            {
                "compile": compiled,
                "busy": found["busy"],
                "verdict": found["verdict"],
                "classes": found["classes"],
                "device_us": found["device_us"],
            }
        )
    )
    assert found["device_us"] > 0 and abs(sum(found["classes"].values()) - found["device_us"]) < 1e-6
    assert 0 < found["busy"] <= 1
    if compiled == "reduce-overhead":  # graph replays record no operators: the corpus comes from eager runs
        scoped = kerntune(
            "scope", "--region", "step", "--corpus", str(corpus), "--json", "--", sys.executable, APP, *SMALL
        )
        assert scoped.code == 0, scoped.stderr
    lines = [line for line in read_corpus(corpus) if line.dtype == "bfloat16" and line.layout == "NT"]
    assert lines, corpus.read_text()
    table = _table(lines, tmp_path / "t.json")
    reference = tmp_path / "ref.pt"
    plain = kerntune(
        "run", "--table", str(tmp_path / "none.json"), "--", "python", APP, *args, "--save-logits", str(reference)
    )
    assert plain.code == 0, plain.stderr  # an unreadable table: a warning, the library runs every call
    verified = kerntune(
        "verify",
        "--no-ab",
        "--json",
        "--",
        "kerntune",
        "run",
        "--table",
        str(table),
        "--spec-dir",
        str(KERNELS),
        "--",
        "python",
        APP,
        *args,
        "--check",
        str(reference),
    )
    assert verified.code == 0, verified.stderr  # the profiled run's logits within the app's tolerance
    engaged = verified.json()
    print(
        json.dumps(
            {
                "compile": compiled,
                "ops": engaged["served_ops"],
                "share": engaged["device_share"],
                "entries": [(e["calls"], e["profiled_launches"]) for e in engaged["entries"]],
            }
        )
    )
    assert not engaged["never_engaged"] and all(e["profiled_launches"] for e in engaged["entries"])
    assert len(engaged["entries"]) == len(lines)
    assert all(c["failed"] == 0 for c in engaged["served_ops"].values())
    assert sum(c["served"] for c in engaged["served_ops"].values()) == sum(e["calls"] for e in engaged["entries"])
    if compiled != "reduce-overhead":  # each served call launched the tuned kernel once, by its own call
        # (and the native gate's check of a form's launch plan launches it once more, at that form's planning call)
        checks = engaged["plan_checks"] or 0
        assert all(
            e["profiled_by"] == "operator"
            and e["calls"] <= e["profiled_launches"] <= e["calls"] + checks
            and not any("nvjet" in k or "gemm" in k.lower() for k in e["other_kernels"])
            for e in engaged["entries"]
        ), engaged["entries"]  # and cuBLAS ran none of them
        assert sum(e["profiled_launches"] - e["calls"] for e in engaged["entries"]) <= checks
    if compiled == "none":
        foreign = _table(lines, tmp_path / "foreign.json", compute_units=1)
        missed = kerntune(
            "run",
            "--table",
            str(foreign),
            "--spec-dir",
            str(KERNELS),
            "--",
            "python",
            APP,
            *args,
            env={"KERNTUNE_VERIFY_OUT": str(tmp_path / "f")},
        )
        assert missed.code == 0, missed.stderr
        (counts,) = [json.loads(p.read_text()) for p in (tmp_path / "f").glob("serve-*.json")]
        assert counts["specs"]["triton_matmul"]["exact"] == 0 and counts["ops"]["aten::mm"]["served"] == 0
