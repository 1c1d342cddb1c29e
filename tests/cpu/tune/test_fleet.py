"""Tuning on several workers (issue: scale out), on PoCL: the local pool shares the shapes between its workers
and records which took each; a local Ray cluster with 2 actors tunes a 200-config space over two shapes to the
same set of results as one worker, and still does when one actor is killed mid-run — no row lost, none twice;
on Ray, candidates compile in a compile actor (CPU only) and planted faults fail as on the direct path."""

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

from tests.conftest import ROOT, SPECS, CliResult, failures_by_config, poll_store

FLEET = str(ROOT / "tests" / "specs" / "fleet")
SHORT = {"KERNTUNE_WARMUP_MS": "1", "KERNTUNE_SAMPLE_BUDGET_MS": "5", "KERNTUNE_CONFIRM_ROUNDS": "0"}
ROW = "SELECT shape_key, role, label, config_key, status FROM candidates"


def _tune(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, **SHORT, "KERNTUNE_HOME": str(home)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kerntune",
            "tune",
            FLEET,
            "--shape",
            "N=4096",
            "--shape",
            "N=8192",
            "--strategy",
            "exhaustive",
            "--json",
            *args,
        ],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


def _rows(home: Path) -> list[tuple[str, ...]]:
    with sqlite3.connect(home / "kerntune.sqlite") as db:
        return db.execute(ROW).fetchall()


def _options(home: Path, run_id: str) -> dict:
    with sqlite3.connect(home / "kerntune.sqlite") as db:
        return json.loads(db.execute("SELECT options FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


def _actor_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"ray::_DeviceActor" in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_local_pool_shares_the_shapes_and_records_who_took_each(tmp_path: Path) -> None:
    report = _finish(_tune(tmp_path, "--workers", "2", "--budget", "6"))
    slots = _options(tmp_path, report["run"]["id"])["shape_slots"]
    assert set(slots) == {"N=4096", "N=8192"} and set(slots.values()) == {"cpu 0", "cpu 1"}  # one each
    assert report["run"]["shape_slots"] == slots and report["run"]["placement"]["workers"] == 2
    assert len(list((tmp_path / "logs").glob("worker-*-[01].log"))) == 2  # two worker processes ran
    assert all(s["winner"] is not None for s in report["shapes"])


def test_ray_cluster_matches_one_worker_and_survives_a_killed_actor(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    single = _finish(_tune(tmp_path / "single"))
    assert single["run"]["stop_reason"] == "every valid config evaluated"
    expected = _rows(tmp_path / "single")
    assert len(expected) == 2 * 200  # per shape: the default as the baseline, then the other 199 configs

    home = tmp_path / "ray"
    proc = _tune(home, "--executor", "ray", "--workers", "2")
    try:
        killed = None
        deadline = time.monotonic() + 600
        while killed is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = _actor_pids()
            if len(poll_store(home / "kerntune.sqlite", ROW)) >= 60 and pids:
                killed = pids[0]
                os.kill(killed, signal.SIGKILL)
        assert killed is not None, "the run ended before an actor could be killed"
        report = _finish(proc)
    finally:  # a failed assertion must not leave the run (and its Ray cluster) behind for the next test
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert report["run"]["status"] == "done", report["run"]
    got = _rows(home)
    keys = [row[:4] for row in got]
    assert len(keys) == len(set(keys)), "a row was written twice"
    assert sorted(got) == sorted(expected)  # nothing lost: every config, with the same outcome
    slots = _options(home, report["run"]["id"])["shape_slots"]
    assert set(slots) == {"N=4096", "N=8192"} and len(set(slots.values())) == 2


def test_ray_compiles_in_a_cpu_actor_and_isolates_planted_faults(kerntune: Callable[..., CliResult]) -> None:
    pytest.importorskip("ray")
    result = kerntune(
        "tune",
        str(SPECS / "faults_opencl"),
        "--executor",
        "ray",
        "--workers",
        "1",
        "--json",
        env={"KERNTUNE_CANDIDATE_TIMEOUT_S": "8", "KERNTUNE_COMPILE_WORKERS": "1"},
    )
    assert result.code == 0, result.stderr
    report = result.json()
    assert failures_by_config(report) == {  # as on the direct path (test_opencl_tune)
        "VARIANT=1,LS=64": "compile",
        "VARIANT=2,LS=64": "hang",
        "VARIANT=3,LS=64": "wrong-result",
        "VARIANT=4,LS=64": "crash",
    }
    failed = {f["config"]["VARIANT"]: f["reason"] for f in report["shapes"][0]["failed"]}
    assert failed[1].endswith("(compile-ahead worker)")  # built by the compile actor, not the timing actor
    assert "died 2 times" in failed[4]  # the segfault killed the timing actor, and again when run once more
    assert report["shapes"][0]["winner"]["config"]["VARIANT"] in (0, 5)
