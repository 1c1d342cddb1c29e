"""``kerntune scope -- python PROGRAM ...``: where a program's device time goes, truthfully. Only device activity
counts, in a steady-state window (skip the start and bound the length, as ``nsys --delay/--duration`` do, or the
ranges the program marks), classed by what ran it (vendor BLAS, attention, Triton from Inductor or the user,
ATen native, NCCL; memcpy and memset apart); how busy the device was, with a verdict on what faster kernels can
do; the GEMM-like operators with shapes, dtypes, layouts, bias, calls and device time, which ``--corpus`` writes
in the one corpus format (``kerntune.runtime.corpus``) for ``kerntune tune --shapes-from``; Inductor's kernels
with the generated file that holds their source. Profile before tuning: tune what the time is spent in.

The program runs once under ``torch.profiler`` (``kerntune.exec.profiled``) in kerntune's interpreter; the trace
is read by ``kerntune.scope.trace``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError
from kerntune.runtime.corpus import append_corpus
from kerntune.scope.trace import WHOLE_RUN, Window, analyze, inductor_sources, load_trace


def program_args(command: Sequence[str]) -> list[str]:
    """``SCRIPT.py ARGS`` or ``-m MODULE ARGS`` from ``python SCRIPT.py ARGS`` / ``python -m MODULE ARGS``: the
    program runs in kerntune's interpreter (its torch is the one profiled or served)."""
    if not command:
        raise UsageError("give the program after --, e.g. kerntune scope -- python train.py --steps 10")
    if not Path(command[0]).name.startswith("python") or len(command) < 2:
        raise UsageError(
            f"scope, verify and run take Python programs: give `python SCRIPT.py ...` or `python -m "
            f"MODULE ...` after -- (got {' '.join(command)!r})"
        )
    program = list(command[1:])
    if program[0].startswith("-") and program[0] != "-m":
        raise UsageError(f"interpreter option {program[0]!r} is not supported here: put it in PYTHON* variables")
    return program


def served_args(command: Sequence[str]) -> list[str] | None:
    """``kerntune run OPTIONS -- python SCRIPT ARGS`` (or ``python -m kerntune run ...``) as the arguments of
    ``-m kerntune.runtime.launch`` (what ``kerntune run`` runs in-process), so a served program is profiled in one
    process; None for other commands."""
    head = list(command[:4])
    if len(head) >= 2 and Path(head[0]).name == "kerntune" and head[1] == "run":
        rest = list(command[2:])
    elif len(head) == 4 and Path(head[0]).name.startswith("python") and head[1:] == ["-m", "kerntune", "run"]:
        rest = list(command[4:])
    else:
        return None
    if "--" not in rest:
        raise UsageError(
            "kerntune run needs the program after its own --: kerntune run --table T.json -- python app.py"
        )
    split = rest.index("--")
    return ["-m", "kerntune.runtime.launch", *rest[:split], "--", *program_args(rest[split + 1 :])]


def profiled_command(command: Sequence[str], out: Path) -> list[str]:
    """``command`` (``python SCRIPT ARGS``, ``python -m MODULE ARGS`` or ``kerntune run ... -- python ...``) run
    under the profiling launcher, in kerntune's interpreter."""
    program = served_args(command) or program_args(command)
    return [sys.executable, "-m", "kerntune.exec.profiled", str(out), "--", *program]


def profile_program(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout_s: float = 1800.0,
    window: Window = WHOLE_RUN,
    keep_trace: Path | None = None,
) -> dict[str, Any]:
    """Run the program once under the profiler; what ran in ``window`` (``kerntune.scope.trace.analyze``, every
    kernel listed), its exit code and output. ``keep_trace``: copy the Chrome trace there."""
    with tempfile.TemporaryDirectory(prefix="kerntune-scope-") as tmp:
        out = Path(tmp) / "profile.json"
        argv = profiled_command(command, out)
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            raise UsageError(f"{' '.join(command)} ran past {timeout_s:g} s under the profiler") from None
        if not out.exists():
            tail = " | ".join(done.stderr.strip().splitlines()[-4:])
            raise UsageError(f"{' '.join(command)} did not finish under the profiler (exit {done.returncode}): {tail}")
        meta: dict[str, Any] = json.loads(out.read_text())
        events = load_trace(Path(meta["trace"]))
        if keep_trace is not None:
            keep_trace.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(meta["trace"], keep_trace)
    found = analyze(events, window, top=10**9)
    if window.region and not found["window"]["spans"]:
        raise UsageError(
            f"the program marked no range named {window.region!r}: wrap its steady state in "
            f"torch.profiler.record_function({window.region!r})"
        )
    return {"gpu": meta["gpu"], "exit_code": meta["exit_code"], **found, "stdout": done.stdout, "stderr": done.stderr}


def inductor_folders() -> list[Path]:
    """Where Inductor writes generated kernels: ``TORCHINDUCTOR_CACHE_DIR``, else its default under the temp dir."""
    named = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or "root"
    return [Path(named)] if named else [Path(tempfile.gettempdir()) / f"torchinductor_{user}"]


def scope(
    command: Sequence[str],
    corpus: Path | None = None,
    top: int = 20,
    window: Window = WHOLE_RUN,
    keep_trace: Path | None = None,
) -> dict[str, Any]:
    """Device time in the window by class and kernel, how busy the device was and what that means, the GEMM-like
    operators (appended to ``corpus`` as corpus lines), Inductor kernels' generated files."""
    found = profile_program(command, window=window, keep_trace=keep_trace)
    sources = inductor_sources((k["name"] for k in found["kernels"]), inductor_folders())
    kernels = [
        {**k, **({"source": sources[k["name"]]} if k["name"] in sources else {})} for k in found["kernels"][:top]
    ]
    if corpus is not None and found["gemms"]:
        append_corpus(corpus, found["gemms"])
    return {
        "gpu": found["gpu"],
        "exit_code": found["exit_code"],
        "window": found["window"],
        "device_us": found["device_us"],
        "classes": found["classes"],
        "busy": found["busy"],
        "verdict": found["verdict"],
        "kernels": kernels,
        "gemms": [json.loads(g.to_json()) for g in found["gemms"]],
        "corpus": str(corpus) if corpus else None,
    }
