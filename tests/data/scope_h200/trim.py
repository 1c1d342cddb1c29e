"""Trim a torch.profiler Chrome trace to what kerntune's scope reads, for keeping as test data.

    python tests/data/scope_h200/trim.py FULL.trace.json.gz TRIMMED.trace.json.gz

Kept: every device event (kernels, memcpy, memset) and the runtime or driver call that launched it (matched by
``correlation``), every host annotation and its device-timeline range (``user_annotation``,
``gpu_user_annotation``: the marked region and torch.compile's ``## Call CompiledFxGraph ##``), and the GEMM-like
operators with their input dims, strides, types and concrete inputs. Dropped: every other host operator and
argument. Scope's figures on the trimmed trace equal those on the full one (tests/cpu/scope checks the classes,
window and corpus lines, not the dropped events)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))

from kerntune.scope.trace import DEVICE_CATEGORIES, MATMUL_OPS, load_trace

KEEP_ARGS = ("correlation", "External id", "Input Dims", "Input Strides", "Input type", "Concrete Inputs")


def trim(events: list[dict]) -> list[dict]:
    device = [e for e in events if e.get("cat") in DEVICE_CATEGORIES]
    wanted = {(e.get("args") or {}).get("correlation") for e in device}
    kept = []
    for e in events:
        cat, name = e.get("cat"), e.get("name")
        if (
            cat in DEVICE_CATEGORIES
            or cat in ("user_annotation", "gpu_user_annotation")
            or (cat in ("cuda_runtime", "cuda_driver") and (e.get("args") or {}).get("correlation") in wanted)
            or (cat == "cpu_op" and name in MATMUL_OPS)
        ):
            args = {k: v for k, v in (e.get("args") or {}).items() if k in KEEP_ARGS}
            kept.append({k: e[k] for k in ("ph", "cat", "name", "ts", "dur") if k in e} | {"args": args})
    return kept


if __name__ == "__main__":
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    target.write_bytes(gzip.compress(json.dumps({"traceEvents": trim(load_trace(source))}).encode(), mtime=0))
