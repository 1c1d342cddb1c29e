"""Run a Python program with a table served to it: ``python -m kerntune.runtime.launch --table T.json [--spec S]
[--spec-dir D] [--mode explore|production] [--backend CUDA|CPU] -- SCRIPT.py ARGS`` (or ``-- -m MODULE ARGS``). What
``kerntune run`` calls; ``kerntune verify -- kerntune run ...`` profiles it.

The program runs as ``__main__`` in this process, after ``kerntune.runtime.serve``, so its library calls reach
the served kernels without a line of it changed. It ends as it would under ``python`` alone: its exit code,
its ``sys.exit`` message, its traceback (its own frames), a KeyboardInterrupt's SIGINT. With ``KERNTUNE_VERIFY_OUT=DIR``
the served operators' counts are written to ``DIR/serve-PID.json`` at exit (beside the dispatchers' reports).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib.util
import json
import os
import runpy
import signal
import sys
import traceback
import types
from pathlib import Path
from types import TracebackType
from typing import Any

from kerntune.runtime.notice import notify
from kerntune.runtime.serving import MODES_HELP, Serving, serve
from kerntune.settings import Settings


def run_program(argv: list[str]) -> int:
    """Run ``SCRIPT.py ARGS`` or ``-m MODULE ARGS`` as ``__main__`` here; its exit code. It ends as it would
    under ``python`` alone (``ending``): a script that is not there, a module not found, ``sys.exit`` with a
    code or a message, an exception's traceback (the program's frames only) and a KeyboardInterrupt."""
    sys.argv = list(argv)
    hook = sys.excepthook
    if argv[0] == "-m":
        sys.argv = argv[1:]
        missing = _missing_module(argv[1]) if len(argv) > 1 else "No code specified for -m"
        if missing:
            sys.stderr.write(f"{sys.executable}: {missing}\n")
            return 1
    elif not Path(argv[0]).is_file():
        sys.stderr.write(
            f"{sys.executable}: can't open file {str(Path(argv[0]).absolute())!r}: "
            "[Errno 2] No such file or directory\n"
        )
        return 2
    try:
        if argv[0] == "-m":
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(argv[0]).resolve().parent))
            _run_script(Path(argv[0]))
    except BaseException as exc:  # the program's own ending, whatever it is: Python's top level would take it
        return ending(exc, hook)
    return 0


def _run_script(script: Path) -> None:
    """Run a script file as ``python SCRIPT`` does: ``sys.argv[0]`` as given, ``__file__`` absolute, a fresh
    ``__main__`` module that stays ``__main__`` for the exit handlers. Not a regular file (a folder or a zip with
    ``__main__.py``): ``runpy.run_path``."""
    if not script.is_file() or script.suffix not in (".py", ""):
        runpy.run_path(str(script), run_name="__main__")
        return
    path = str(script.absolute())
    code = compile(script.read_bytes(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path  # exec adds __builtins__
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _missing_module(name: str) -> str | None:
    """Python's own message for ``-m NAME`` when there is no such module, else None."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        return f"Error while finding module specification for {name!r} ({type(exc).__name__}: {exc})"
    return None if found is not None else f"No module named {name}"


def ending(exc: BaseException, hook: Any) -> int:
    """What the interpreter's top level does with an exception that ends a program, done here: ``SystemExit``
    gives its code (None: 0; an int: itself; anything else printed to stderr, 1); any other exception is
    handed to ``sys.excepthook`` (the program's own if it set one) with kerntune's frames cut from its
    traceback, and gives 1; a KeyboardInterrupt then ends the process by SIGINT, after the exit handlers."""
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or isinstance(code, int):
            return int(code or 0)
        with contextlib.suppress(Exception):
            sys.stderr.write(f"{code}\n")
        return 1
    program_hook = sys.excepthook if sys.excepthook is not hook else sys.__excepthook__
    exc.__traceback__ = _program_frames(exc.__traceback__)
    try:
        program_hook(type(exc), exc, exc.__traceback__)
    except Exception:
        traceback.print_exception(exc)
    if isinstance(exc, KeyboardInterrupt):
        _die_by_sigint()
    return 1


def _program_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the program's first frame on: past this module's frames and runpy's ``_run_code``,
    where ``python`` starts."""
    start = tb
    while start is not None and start.tb_frame.f_code.co_filename == __file__:
        start = start.tb_next
    at = start
    while at is not None:
        code = at.tb_frame.f_code
        if code.co_name == "_run_code" and code.co_filename in ("<frozen runpy>", runpy.__file__):
            start = at.tb_next
        at = at.tb_next
    return start or tb


def _die_by_sigint() -> None:
    """End as CPython ends on an unhandled KeyboardInterrupt: exit handlers run, then the process kills itself
    with SIGINT (a shell sees 130, a parent a signal)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if hasattr(signal, "SIGINT"):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


def _write_counts(serving: Serving, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"serve-{os.getpid()}.json").write_text(json.dumps(serving.stats(), indent=1))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m kerntune.runtime.launch")
    parser.add_argument("--table", required=True, help="the deployed table (kerntune deploy TUNING_RUN --table T.json)")
    parser.add_argument(
        "--spec",
        action="append",
        default=[],
        help="a spec serving operators; repeat for several",
    )
    parser.add_argument(
        "--spec-dir",
        action="append",
        default=[],
        help="a folder where the specs the table's entries name may be found (by name and kernel source hash); "
        "a spec path written in the table is never imported",
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
            options.table,
            specs=options.spec,
            spec_dirs=options.spec_dir,
            mode=options.mode,
            backend=options.backend,
            settings=settings,
        )
    except Exception as exc:  # serving that cannot start must never keep the program from running
        notify(f"kerntune run: the table is not served ({type(exc).__name__}: {exc}); the library runs every call")
    else:
        if settings.verify_out:
            atexit.register(_write_counts, serving, Path(settings.verify_out))
    return run_program(program)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
