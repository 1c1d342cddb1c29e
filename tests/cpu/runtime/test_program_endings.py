"""``kerntune run -- python prog.py`` ends as ``python prog.py`` does: the same exit code (or signal), the same
stdout, the same stderr (its traceback, its ``sys.exit`` message), under the same warning filters. Each small
program runs both ways, with a table that serves none of its calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import KERNELS

PROGRAMS = {
    "prints": "print('hello', 42)\n",
    "exit_code": "import sys\nprint('before')\nsys.exit(3)\n",
    "exit_code_past_255": "import sys\nsys.exit(300)\n",
    "exit_message": "import sys\nsys.exit('the input is wrong')\n",
    "exit_none": "raise SystemExit(None)\n",
    "file_not_found": "def load():\n    open('/nonexistent/kerntune/input.txt')\n\n\nload()\n",
    "chained": "try:\n    {}['k']\nexcept KeyError as exc:\n    raise ValueError('bad key') from exc\n",
    "keyboard_interrupt": "import atexit\natexit.register(lambda: print('exit handler'))\nraise KeyboardInterrupt\n",
    "sigint": "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)\n",
    "own_excepthook": (
        "import sys\nsys.excepthook = lambda t, v, tb: print('own hook:', t.__name__, v, file=sys.stderr)\n"
        "raise RuntimeError('seen by its own hook')\n"
    ),
    "warning_as_error": (
        "import warnings\nwarnings.warn('deprecated thing', DeprecationWarning)\nprint('not reached')\n"
    ),
    "argv": "import sys\nprint(sys.argv, __name__, __file__.endswith('argv.py'))\n",
}


def _both(
    program: Path, table: Path, *options: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    full = {**os.environ, **(env or {})}
    alone = subprocess.run(
        [sys.executable, program.name, "x", "--flag"], capture_output=True, text=True, cwd=program.parent, env=full
    )
    served = subprocess.run(
        [
            sys.executable,
            "-m",
            "kerntune",
            "run",
            "--table",
            str(table),
            "--backend",
            "CPU",
            *options,
            "--",
            "python",
            program.name,
            "x",
            "--flag",
        ],
        capture_output=True,
        text=True,
        cwd=program.parent,
        env=full,
        timeout=300,
    )
    return alone, served


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_ends_the_same_with_and_without_kerntune_run(tmp_path: Path, name: str) -> None:
    program = tmp_path / f"{name}.py"
    program.write_text(PROGRAMS[name])
    table = tmp_path / "empty.json"
    table.write_text(json.dumps({"schema": 1, "validators": {}, "entries": []}))
    env = {"PYTHONWARNINGS": "error"} if name == "warning_as_error" else None
    alone, served = _both(program, table, env=env)
    assert served.returncode == alone.returncode, served.stderr
    assert served.stdout == alone.stdout
    assert served.stderr == alone.stderr


def test_a_missing_script_ends_as_python_says(tmp_path: Path) -> None:
    table = tmp_path / "empty.json"
    table.write_text(json.dumps({"schema": 1, "entries": []}))
    alone, served = _both(tmp_path / "missing.py", table)
    assert served.returncode == alone.returncode == 2
    assert "can't open file" in served.stderr and str(tmp_path / "missing.py") in served.stderr


def test_warnings_as_errors_do_not_stop_kerntune_and_a_traceback_survives_serving(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    from kerntune.runtime.keys import problem_source_hash
    from kerntune.runtime.serving import cpu_device_fields, load_served_spec

    problem = load_served_spec(KERNELS / "triton_gemm")
    key = {"op": problem.name, "source": problem_source_hash(problem), "dtype": "float16", **cpu_device_fields()}
    table = tmp_path / "absent_key.json"  # an entry no call of the program has
    entry = {"key": {**key, "M": 1, "N": 1, "K": 1, "layout": "NN", "bias": 0}, "config": {}}
    table.write_text(json.dumps({"schema": 1, "entries": [entry]}))
    program = tmp_path / "matmul_then_fail.py"
    program.write_text(
        "import torch\n"
        "print(float(torch.mm(torch.ones(2, 3).half(), torch.ones(3, 2).half())[0, 0]))\n"
        "raise FileNotFoundError(2, 'No such file or directory', 'weights.bin')\n"
    )
    env = {"PYTHONWARNINGS": "error", "TRITON_INTERPRET": "1"}
    alone, served = _both(program, table, "--spec", str(KERNELS / "triton_gemm"), env=env)
    assert served.returncode == alone.returncode == 1
    assert served.stdout == alone.stdout == "3.0\n"
    tail = alone.stderr.strip().splitlines()[-4:]  # the program's frames and its exception, kerntune's lines before
    assert served.stderr.strip().splitlines()[-4:] == tail and "FileNotFoundError" in tail[-1]
    assert "kerntune: error" not in served.stderr
