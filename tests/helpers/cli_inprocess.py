"""The CLI called in this process (``kerntune.cli.app.main``), for tests that make many calls: no interpreter
start per call. A store with one finished run, written through the Store API, gives the read verbs a run."""

from __future__ import annotations

import io
import sqlite3
import traceback
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from kerntune.cli.app import main
from kerntune.model import Budget, Conditions, Config, Measurement, Run, Shape, Target, Verdict
from kerntune.store import CandidateResult, Store

TARGET = Target("opencl", "pocl", "cpu-test", "test device", 4)
SHAPE = Shape.of({"N": 4096})
RUN_ID = "20260101-000000-abcd"


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("kerntune: error:")]


def call(args: Sequence[str]) -> Outcome:
    """``kerntune ARGS`` in this process. An exception that escapes ``main`` is exit code -1 with its traceback in
    stderr, so an assertion on the code or on 'Traceback' reports it."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # reported through the outcome, as a traceback would be on a terminal
            err.write(traceback.format_exc())
            code = -1
    return Outcome(code, out.getvalue(), err.getvalue())


def stored_run(home: Path, spec_path: str = "/nowhere/spec.py") -> str:
    """A finished run in the store at ``home``: the default baseline and one gated, faster config."""
    store = Store(home)
    try:
        store.create_run(
            Run(
                id=RUN_ID,
                problem="vector_add",
                spec_path=spec_path,
                spec_hash="0" * 16,
                target=TARGET,
                strategy="exhaustive",
                budget=Budget(4),
                shapes=(SHAPE,),
                dtype="float32",
                seed=0,
                status="done",
                created="2026-01-01T00:00:00",
            )
        )
        gate = Verdict("gate", "pass", "rel_l2", 1e-7, 1e-5, "ok")
        for config, role, label, ms in (
            (Config.of({"LS": 64}), "baseline", "default", 2.0),
            (Config.of({"LS": 128}), "search", "", 1.0),
        ):
            cid = store.start_candidate(RUN_ID, SHAPE, config, role, label)
            samples = tuple(ms * (1 + 0.001 * i) for i in range(10))
            store.finish_candidate(
                cid, CandidateResult("ok", measurement=Measurement(samples, Conditions("events")), verdict=gate)
            )
    finally:
        store.close()
    return RUN_ID


def statuses(home: Path) -> list[str]:
    """Every run's status, read by plain SQLite (the store still opens)."""
    with sqlite3.connect(home / "kerntune.sqlite") as conn:
        return [r[0] for r in conn.execute("SELECT status FROM runs")]
