"""Background kerntune commands for the front ends (MCP server, web page): a ``Job`` is one ``python -m kerntune
... --json`` child process with its stdout and stderr in files, polled for its state — running (with the last
line it logged: the progress), done (its JSON result) or failed (its exit code and last error line) — and
stopped on request. A child process, so a long search never blocks a front end, and nothing a kernel does can
take one down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Job:
    argv: list[str]
    out: Path
    err: Path
    process: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def state(self) -> dict[str, object]:
        code = self.process.poll()
        found: dict[str, object] = {
            "command": " ".join(self.argv[2:]),
            "elapsed_s": round(time.monotonic() - self.started, 1),
        }
        lines = self.err.read_text(errors="replace").strip().splitlines()
        if code is None:
            return {**found, "state": "running", "progress": lines[-1][-300:] if lines else ""}
        text = self.out.read_text(errors="replace")
        try:
            result = json.loads(text) if text.strip() else None
        except ValueError:
            result = {"output": text[-2000:]}
        return {
            **found,
            "state": "done" if code == 0 else "failed",
            "exit": code,
            "result": result,
            **({"error": lines[-1][-500:]} if code != 0 and lines else {}),
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_job(args: list[str], folder: Path, name: str, home: Path) -> Job:
    """``python -m kerntune ARGS --json`` (``--json`` before a ``--`` that starts a program's arguments) with the
    store at ``home``; output in ``folder/name.out|.err``."""
    folder.mkdir(parents=True, exist_ok=True)
    out, err = folder / f"{name}.out", folder / f"{name}.err"
    split = args.index("--") if "--" in args else len(args)  # a program's own arguments follow its --
    argv = [sys.executable, "-m", "kerntune", *args[:split], "--json", *args[split:]]
    with out.open("wb") as o, err.open("wb") as e:
        process = subprocess.Popen(
            argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL, env={**os.environ, "KERNTUNE_HOME": str(home)}
        )
    return Job(argv, out, err, process)
