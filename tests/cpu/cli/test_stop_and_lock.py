"""One process per run, and SIGTERM (what the web page's Stop sends) handled as Ctrl-C: while a tune runs, a second
``--resume`` of its run is refused in one line; SIGTERM then ends the tune with exit 143, the run marked
interrupted (never left ``running``) and the ``--resume`` command printed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, FAST_ENV, ROOT, CliResult, poll_store

pytest.importorskip("pyopencl")


def test_a_second_resume_is_refused_and_sigterm_marks_the_run_interrupted(
    tmp_path: Path, kerntune: Callable[..., CliResult]
) -> None:
    home = tmp_path / "store"
    env = {**os.environ, **FAST_ENV, "KERNTUNE_HOME": str(home), "KERNTUNE_SAMPLE_BUDGET_MS": "400"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kerntune", "tune", str(EXAMPLES / "opencl_matmul"), "--shape", "M=64,N=64,K=64"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    db = home / "kerntune.sqlite"
    deadline = time.monotonic() + 240
    try:
        while not poll_store(db, "SELECT id FROM candidates WHERE status != 'pending'"):
            assert proc.poll() is None, f"the tune ended before it could be stopped: {proc.stderr}"
            assert time.monotonic() < deadline, "no candidate finished within 240 s"
            time.sleep(0.2)
        ((run_id, status),) = poll_store(db, "SELECT id, status FROM runs")
        assert status == "running"

        second = kerntune("tune", "--resume", run_id, env={"KERNTUNE_HOME": str(home)})
        assert second.code == 2 and "Traceback" not in second.stderr, second.stderr
        assert f"tuning run {run_id} is being tuned by another kerntune process" in second.stderr
        assert proc.poll() is None  # the refusal left the first process alone

        proc.send_signal(signal.SIGTERM)  # to the tuner only, as the web page's Stop does
        _, stderr = proc.communicate(timeout=120)
    finally:  # killed whatever happened above: a failed test must not leave the tuner running
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr, stderr
    assert f"kerntune tune --resume {run_id}" in stderr
    assert poll_store(db, "SELECT status FROM runs") == [("interrupted",)]
    assert _group_ends(proc.pid, within_s=20), "a worker of the stopped tune is still running"


def _group_ends(pgid: int, within_s: float) -> bool:
    """Whether every process of the group (the tuner and the workers it started) has ended within the time."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    os.killpg(pgid, signal.SIGKILL)
    return False
