"""The whole loop on a Hugging Face Llama that knows nothing of kerntune (examples/hf_llama, a small config on the
CPU): scope's steady-state window writes the GEMM corpus, a table for kernels/triton_gemm is keyed from it,
``kerntune run`` serves it (Triton's interpreter on the CPU dispatch key) and every call of a covered key runs the
tuned kernel, the logits agree with the table-less run, and ``kerntune verify`` finds every entry engaged."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.runtime.corpus import read_corpus
from tests.conftest import EXAMPLES, KERNELS, CliResult, has_gpu

pytest.importorskip("transformers")
pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(has_gpu(), reason="serves the CPU dispatch key under the interpreter")

APP = str(EXAMPLES / "hf_llama" / "app.py")
SMALL = [
    "--layers",
    "2",
    "--hidden",
    "64",
    "--intermediate",
    "128",
    "--heads",
    "4",
    "--kv-heads",
    "2",
    "--vocab",
    "128",
    "--device",
    "cpu",
    "--dtype",
    "float16",
    "--batch",
    "4",
    "--steps",
    "3",
    "--warmup",
    "1",
]
CONFIG = {
    "BLOCK_M": 16,
    "BLOCK_N": 32,
    "BLOCK_K": 32,
    "GROUP_M": 8,
    "SPLIT_K": 1,
    "FUSED": 0,
    "TMA": 0,
    "PERSISTENT": 0,
    "num_warps": 4,
    "num_stages": 2,
}


def test_scope_corpus_serve_and_verify_on_an_unmodified_llama(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    from kerntune.runtime.keys import problem_source_hash
    from kerntune.runtime.serving import cpu_device_fields, load_served_spec

    corpus = tmp_path / "llama.jsonl"
    scoped = kerntune("scope", "--region", "step", "--corpus", str(corpus), "--json", "--", sys.executable, APP, *SMALL)
    assert scoped.code == 0, scoped.stderr
    lines = read_corpus(corpus)
    # Decode at batch 4: q/o, k/v, gate/up and down projections and the LM head; nn.Linear weights, layout NT.
    assert {(line.shape["M"], line.shape["N"], line.shape["K"]) for line in lines} == {
        (4, 64, 64),
        (4, 32, 64),
        (4, 128, 64),
        (4, 64, 128),
    }
    assert {(line.op, line.layout, line.bias, line.dtype) for line in lines} == {("aten::mm", "NT", 0, "float16")}
    assert sum(line.calls for line in lines) == 3 * (2 * 7 + 1)  # steps × (layers × 7 projections + LM head)

    spec = load_served_spec(KERNELS / "triton_gemm")
    fixed = {"op": spec.name, "source": problem_source_hash(spec), "dtype": "float16", **cpu_device_fields()}
    entries = [
        {
            "key": {**fixed, **line.shape, "layout": line.layout, "bias": line.bias},
            "config": CONFIG,
            "status": "measured",
            "spec": str(KERNELS / "triton_gemm"),
        }
        for line in lines
    ]
    table = tmp_path / "llama.json"
    table.write_text(json.dumps({"schema": 1, "provenance": {}, "validators": {}, "device": {}, "entries": entries}))

    reference = tmp_path / "reference.pt"
    plain = kerntune(
        "run",
        "--table",
        str(tmp_path / "none.json"),
        "--backend",
        "CPU",
        "--",
        "python",
        APP,
        *SMALL,
        "--save-logits",
        str(reference),
        env={"TRITON_INTERPRET": "1"},
    )
    assert plain.code == 0 and reference.exists(), plain.stderr  # an unreadable table: the library, a warning
    out = tmp_path / "served"
    served = kerntune(
        "run",
        "--table",
        str(table),
        "--backend",
        "CPU",
        "--spec-dir",
        str(KERNELS),
        "--",
        "python",
        APP,
        *SMALL,
        "--check",
        str(reference),
        env={"TRITON_INTERPRET": "1", "KERNTUNE_VERIFY_OUT": str(out)},
    )
    assert served.code == 0, served.stderr  # the app checked its logits against the table-less run
    (counts,) = [json.loads(p.read_text()) for p in out.glob("serve-*.json")]
    stats = counts["specs"]["triton_matmul"]
    # Every call of a covered key ran the tuned kernel (warm-up and timed steps); only the prompt's prefill
    # (M = 4 × 32 tokens, outside scope's window, so never in the corpus) missed.
    assert stats["exact"] == 4 * (2 * 7 + 1) and counts["ops"]["aten::mm"]["failed"] == 0
    assert all("M=128" in key for key in stats["missed_keys"]), stats["missed_keys"]

    verified = kerntune(
        "verify",
        "--no-ab",
        "--json",
        "--",
        "kerntune",
        "run",
        "--table",
        str(table),
        "--backend",
        "CPU",
        "--spec-dir",
        str(KERNELS),
        "--",
        "python",
        APP,
        *SMALL,
        env={"TRITON_INTERPRET": "1"},
    )
    assert verified.code == 0, verified.stderr
    found = verified.json()
    assert len(found["entries"]) == 4 and not found["never_engaged"]
    assert all(e["engaged"] and e["kernel"] == "matmul" for e in found["entries"])
    assert found["served_ops"]["aten::mm"] == {
        "served": sum(e["calls"] for e in found["entries"]),
        "library": found["calls"] - found["exact_calls"],
        "failed": 0,
    }
