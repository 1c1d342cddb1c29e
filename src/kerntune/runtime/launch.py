"""Run a Python program with a table served to it: ``python -m kerntune.runtime.launch --table T.json [--spec S]
[--mode explore|production] [--backend CUDA|CPU] -- SCRIPT.py ARGS`` (or ``-- -m MODULE ARGS``). What
``kerntune run`` calls; ``kerntune verify -- kerntune run ...`` profiles it.

The program runs as ``__main__`` in this process, after ``kerntune.runtime.serve``, so its library calls reach
the served kernels without a line of it changed; its exit code is passed on. With ``KERNTUNE_VERIFY_OUT=DIR``
the served operators' counts are written to ``DIR/serve-PID.json`` at exit (beside the dispatchers' reports).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import runpy
import sys
import warnings
from pathlib import Path

from kerntune.runtime.serving import MODES_HELP, Serving, serve
from kerntune.settings import Settings


def run_program(argv: list[str]) -> int:
    """Run ``SCRIPT.py ARGS`` or ``-m MODULE ARGS`` as ``__main__`` here; its exit code."""
    sys.argv = list(argv)
    try:
        if argv[0] == "-m":
            sys.argv = argv[1:]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(argv[0]).resolve().parent))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def _write_counts(serving: Serving, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"serve-{os.getpid()}.json").write_text(json.dumps(serving.stats(), indent=1))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m kerntune.runtime.launch")
    parser.add_argument("--table", required=True, help="the deployed table (kerntune deploy RUN --table T.json)")
    parser.add_argument(
        "--spec",
        action="append",
        default=[],
        help="a spec serving operators (default: the specs the table's entries name); repeat for several",
    )
    parser.add_argument("--mode", default="explore", choices=("explore", "production"), help=MODES_HELP)
    parser.add_argument(
        "--backend",
        default="CUDA",
        choices=("CUDA", "CPU"),
        help="the dispatch key served (CPU: the Triton interpreter)",
    )
    if "--" not in argv:
        parser.error("give the program after --, e.g. --table T.json -- app.py --steps 10")
    split = argv.index("--")
    options, program = parser.parse_args(argv[:split]), argv[split + 1 :]
    if not program:
        parser.error("give the program after --")
    settings = Settings.from_env()
    try:
        serving = serve(
            options.table, specs=options.spec, mode=options.mode, backend=options.backend, settings=settings
        )
    except Exception as exc:  # serving that cannot start must never keep the program from running
        warnings.warn(
            f"kerntune run: the table is not served ({type(exc).__name__}: {exc}); the library runs every call",
            RuntimeWarning,
            stacklevel=1,
        )
    else:
        if settings.verify_out:
            atexit.register(_write_counts, serving, Path(settings.verify_out))
    return run_program(program)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
