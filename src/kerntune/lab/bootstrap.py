"""Run a Python program with a capture armed: ``python -m kerntune.lab.bootstrap REQUEST.json -- SCRIPT.py ARGS``
(or ``-- -m MODULE ARGS``), used by ``kerntune lab capture``. The program runs as ``__main__`` in this process, so the
hook sees its launches; the exit code is the program's, and the capture's outcome is written to REQUEST's
``result`` path."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kerntune.lab.capture import capture
from kerntune.runtime.launch import run_program


def main() -> None:
    request = json.loads(Path(sys.argv[1]).read_text())
    program = sys.argv[sys.argv.index("--") + 1 :]
    with capture(
        request["kernel"],
        request["out"],
        nth=request["nth"],
        scope=request["scope"],
        match=request.get("match", ""),
        limit_mb=request.get("limit_mb", 4096.0),
    ) as state:
        code = run_program(program)
    Path(request["result"]).write_text(json.dumps({**state.summary(), "exit": code}))
    sys.exit(code)


if __name__ == "__main__":
    main()
