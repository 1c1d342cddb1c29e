"""Run a Python program under ``torch.profiler`` and keep its trace: ``python -m kerntune.exec.profiled OUT.json
-- SCRIPT.py ARGS`` (or ``-- -m MODULE ARGS``). Used by ``kerntune scope`` and ``kerntune verify``.

OUT.json holds the program, its exit code, whether a GPU was profiled, and ``trace``: the Chrome trace written
beside it (``OUT.trace.json``, with input shapes, dtypes and strides), which ``kerntune.scope.trace`` reads. The
program runs as ``__main__`` in this process, so the profiler sees every launch; its exit code is passed on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kerntune.runtime.launch import run_program


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -m kerntune.exec.profiled OUT.json -- SCRIPT.py ARGS | -m MODULE ARGS\n")
        return 2
    out, program = Path(argv[0]), argv[2:]
    import torch
    from torch.profiler import ProfilerActivity, profile

    gpu = bool(torch.cuda.is_available())
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=activities, record_shapes=True) as prof:
        code = run_program(program)
        if gpu:
            torch.cuda.synchronize()
    trace = out.with_suffix(".trace.json")
    prof.export_chrome_trace(str(trace))
    out.write_text(json.dumps({"gpu": gpu, "exit_code": code, "program": program, "trace": str(trace)}, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
