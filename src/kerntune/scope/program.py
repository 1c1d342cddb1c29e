"""``kerntune scope -- python PROGRAM ...``: which kernels a program spends its GPU time in, which implementation
each is (cuBLAS nvjet, CUTLASS, Triton, ATen native, ...), and the shapes of the operators that launched them;
the matmul shapes go to a corpus for offline tuning. Profile before tuning: tune what the time is spent in.

The program runs once under ``torch.profiler`` (``kerntune.exec.profiled``) in kerntune's interpreter.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError

IMPLEMENTATIONS = (
    ("cuBLAS (nvjet)", re.compile(r"^nvjet")),
    ("CUTLASS", re.compile(r"cutlass", re.I)),
    ("cuBLAS", re.compile(r"cublas|^(sm\d+|ampere|hopper|volta|turing)_.*gemm|xmma_gemm", re.I)),
    ("hipBLASLt / rocBLAS (Tensile)", re.compile(r"^Cijk_")),
    ("Triton (Inductor)", re.compile(r"^triton_(poi|red|per|tem|mm)")),
    ("FlashAttention", re.compile(r"flash", re.I)),
    ("ATen native", re.compile(r"at::native|^void at::|elementwise_kernel|reduce_kernel")),
)
CUSTOM = "custom (Triton, CUDA or HIP)"


def implementation(kernel: str) -> str:
    for label, pattern in IMPLEMENTATIONS:
        if pattern.search(kernel):
            return label
    return CUSTOM


def program_args(command: Sequence[str]) -> list[str]:
    """``SCRIPT.py ARGS`` or ``-m MODULE ARGS`` from ``python SCRIPT.py ARGS`` / ``python -m MODULE ARGS``: the
    program runs in kerntune's interpreter (its torch is the one profiled or served)."""
    if not command:
        raise UsageError("give the program after --, e.g. kerntune scope -- python train.py --steps 10")
    if not Path(command[0]).name.startswith("python") or len(command) < 2:
        raise UsageError(f"give `python SCRIPT.py ...` or `python -m MODULE ...` after -- (got {' '.join(command)!r})")
    program = list(command[1:])
    if program[0].startswith("-") and program[0] != "-m":
        raise UsageError(f"interpreter option {program[0]!r} is not supported here: put it in PYTHON* variables")
    return program


def served_args(command: Sequence[str]) -> list[str] | None:
    """``kerntune run OPTIONS -- python SCRIPT ARGS`` as the arguments of ``-m kerntune.runtime.launch`` (what
    ``kerntune run`` runs in-process), so a served program is profiled in one process; None for other commands."""
    if len(command) < 2 or Path(command[0]).name != "kerntune" or command[1] != "run":
        return None
    rest = list(command[2:])
    if "--" not in rest:
        raise UsageError("kerntune run needs the program after its own --: kerntune run --table T.json -- python "
                         "app.py")
    split = rest.index("--")
    return ["-m", "kerntune.runtime.launch", *rest[:split], "--", *program_args(rest[split + 1:])]


def profiled_command(command: Sequence[str], out: Path) -> list[str]:
    """``command`` (``python SCRIPT ARGS``, ``python -m MODULE ARGS`` or ``kerntune run ... -- python ...``) run
    under the profiling launcher, in kerntune's interpreter."""
    program = served_args(command) or program_args(command)
    return [sys.executable, "-m", "kerntune.exec.profiled", str(out), "--", *program]


def profile_program(command: Sequence[str], env: Mapping[str, str] | None = None, timeout_s: float = 1800.0
                    ) -> dict[str, Any]:
    """Run the program once under the profiler; its kernels and operators, plus its output."""
    with tempfile.TemporaryDirectory(prefix="kerntune-scope-") as tmp:
        out = Path(tmp) / "profile.json"
        argv = profiled_command(command, out)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})},
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise UsageError(f"{' '.join(command)} ran past {timeout_s:g} s under the profiler") from None
        if not out.exists():
            tail = " | ".join(done.stderr.strip().splitlines()[-4:])
            raise UsageError(f"{' '.join(command)} did not finish under the profiler (exit {done.returncode}): {tail}")
        data: dict[str, Any] = json.loads(out.read_text())
    data["stdout"], data["stderr"] = done.stdout, done.stderr
    return data


def matmul_shape(op: Mapping[str, Any]) -> dict[str, Any] | None:
    """M, N, K (and batch) of a matmul-like operator from its input shapes; None when they do not read as one."""
    shapes, name = [s for s in op["input_shapes"] if s], op["op"]
    dtype = next((d for d in op.get("input_dtypes") or [] if d), "")
    try:
        if name in ("aten::mm", "aten::_scaled_mm", "aten::matmul") and len(shapes[0]) == 2:
            (m, k), (_, n) = shapes[0], shapes[1]
        elif name == "aten::addmm":
            (m, k), (_, n) = shapes[1], shapes[2]
        elif name in ("aten::bmm", "aten::baddbmm"):
            a, b = (shapes[1], shapes[2]) if name == "aten::baddbmm" else (shapes[0], shapes[1])
            return {"op": name, "B": a[0], "M": a[1], "N": b[2], "K": a[2], "dtype": dtype}
        elif name == "aten::linear":
            *lead, k = shapes[0]
            m, n = 1, shapes[1][0]
            for d in lead:
                m *= d
        else:
            return None
    except (IndexError, ValueError, TypeError):
        return None
    return {"op": name, "M": m, "N": n, "K": k, "dtype": dtype}


def scope(command: Sequence[str], corpus: Path | None = None, top: int = 20) -> dict[str, Any]:
    """Kernels by share of device time with their implementation; operators with shapes; the matmul corpus."""
    data = profile_program(command)
    total = sum(k["device_us"] for k in data["kernels"]) or 0.0
    kernels = [{**k, "share": k["device_us"] / total if total else None, "implementation": implementation(k["name"])}
               for k in data["kernels"][:top]]
    shapes: dict[str, dict[str, Any]] = {}
    for op in data["ops"]:
        found = matmul_shape(op)
        if found is not None:
            row = shapes.setdefault(json.dumps(found, sort_keys=True), {**found, "calls": 0, "device_us": 0.0})
            row["calls"] += op["calls"]
            row["device_us"] += op["device_us"]
    if corpus is not None:
        corpus.parent.mkdir(parents=True, exist_ok=True)
        with corpus.open("a") as handle:
            for row in shapes.values():
                handle.write(json.dumps(row) + "\n")
    return {"gpu": data["gpu"], "exit_code": data["exit_code"], "device_us": total, "kernels": kernels,
            "ops": data["ops"][:top], "matmul_shapes": list(shapes.values()),
            "corpus": str(corpus) if corpus else None}
