"""Crash and hang isolation of the worker pool, with a null workload (no device needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kerntune.errors import SpecError
from kerntune.exec.pool import Worker

ROOT = Path(__file__).resolve().parents[3]
FNS = "tests.helpers.worker_fns"


@pytest.fixture
def worker(tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    w = Worker((f"{FNS}:setup", {}), log_path=tmp_path / "worker.log", env=env, setup_timeout_s=60)
    w.start()
    yield w
    w.stop()


def test_results_and_candidate_failures(worker: Worker) -> None:
    ok = worker.call(f"{FNS}:echo", {"x": 1}, 30)
    assert ok.status == "ok" and ok.value["payload"] == {"x": 1}
    failed = worker.call(f"{FNS}:fail", {}, 30)
    assert (failed.status, failed.kind, failed.reason) == ("failed", "compile", "planted failure")
    assert not failed.restarted
    error = worker.call(f"{FNS}:boom", {}, 30)
    assert error.status == "error" and error.kind == "ValueError" and "unexpected" in error.reason
    assert worker.call(f"{FNS}:noisy", {}, 30).value == "clean"


def test_segfault_is_a_crash_and_the_worker_restarts(worker: Worker) -> None:
    before = worker.call(f"{FNS}:echo", {}, 30).value["pid"]
    crash = worker.call(f"{FNS}:segfault", {}, 30)
    assert crash.status == "failed" and crash.kind == "crash" and "SIGSEGV" in crash.reason and crash.restarted
    after = worker.call(f"{FNS}:echo", {}, 30)
    assert after.status == "ok" and after.value["pid"] != before
    assert worker.restarts == 1


def test_hang_is_killed_after_the_timeout(worker: Worker) -> None:
    hang = worker.call(f"{FNS}:hang", {}, 1.5)
    assert hang.status == "failed" and hang.kind == "hang" and hang.restarted
    assert worker.call(f"{FNS}:echo", {"y": 2}, 30).value["payload"] == {"y": 2}


def test_setup_failure_is_a_clear_error(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    w = Worker(
        ("kerntune.tune.evaluate:setup", {"spec_path": str(tmp_path / "missing.py")}),
        log_path=tmp_path / "w.log",
        env=env,
    )
    with pytest.raises(SpecError, match="does not exist"):
        w.start()
