"""kill -9 in the middle of a tune: `show` reads what finished; then --resume: nothing finished is measured again,
the set completes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, FAST_ENV, ROOT, CliResult, poll_store

pytest.importorskip("pyopencl")


def _finished(db: Path) -> dict[int, tuple[str, int]]:
    rows = poll_store(
        db,
        "SELECT c.id, c.config_key, COUNT(m.id) FROM candidates c LEFT JOIN measurements m"
        " ON m.candidate_id = c.id AND m.phase = 'search' WHERE c.status != 'pending' GROUP BY c.id",
    )
    return {r[0]: (r[1], r[2]) for r in rows}


def test_kill_9_then_resume(tmp_path: Path, kerntune: Callable[..., CliResult]) -> None:
    home = tmp_path / "store"
    env = {**os.environ, **FAST_ENV, "KERNTUNE_HOME": str(home), "KERNTUNE_SAMPLE_BUDGET_MS": "400"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kerntune",
            "tune",
            str(EXAMPLES / "opencl_matmul"),
            "--shape",
            "M=64,N=64,K=64",
            "--budget",
            "12",
            "--json",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    db = home / "kerntune.sqlite"
    deadline = time.monotonic() + 240
    try:
        while len(_finished(db)) < 4:
            assert proc.poll() is None, "the tune ended before it could be killed"
            assert time.monotonic() < deadline, "no progress within 240 s"
            time.sleep(0.2)
    finally:  # killed whether the wait succeeded or not: a failed wait must not leave the tuner running
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = _finished(db)
    assert 4 <= len(before) < 13

    with sqlite3.connect(db) as conn:
        run_id, status = conn.execute("SELECT id, status FROM runs").fetchone()
    assert status == "running"  # killed: it never had the chance to say otherwise
    # What finished before the kill is readable at once: the shape's best so far, from the store alone.
    shown = kerntune("show", run_id, "--json", env={"KERNTUNE_HOME": str(home)})
    assert shown.code == 0, shown.stderr
    so_far = json.loads(shown.stdout)
    assert so_far["run"]["status"] == "running" and so_far["shapes"][0]["winner"]["status"] == "ok"

    result = kerntune("tune", "--resume", run_id, "--json", env={"KERNTUNE_HOME": str(home)})
    assert result.code == 0, result.stderr
    after = _finished(db)
    for cid, (key, count) in before.items():
        assert after[cid] == (key, count), f"candidate {key} was measured again"
    assert all(count <= 1 for _, count in after.values())
    assert len(after) == 13  # 12 searched + the default baseline: the full set
    report = json.loads(result.stdout)
    assert report["run"]["status"] == "done" and report["shapes"][0]["winner"]["gate"]["outcome"] == "pass"
    keys = [key for key, _ in after.values()]
    assert len(keys) == len(set(keys))
