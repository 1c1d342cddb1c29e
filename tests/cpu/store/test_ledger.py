"""The ledger: failures are listed across runs, and a new run skips what failed for the same source and device."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.conftest import EXAMPLES, SPECS, CliResult, failures_by_config

pytest.importorskip("pyopencl")

ENV = {"KERNTUNE_CANDIDATE_TIMEOUT_S": "8", "KERNTUNE_CONFIRM_ROUNDS": "0"}


def test_second_run_skips_deterministic_failures_and_retry_runs_them(kerntune: Callable[..., CliResult]) -> None:
    started = time.monotonic()
    first = kerntune("tune", str(SPECS / "faults_opencl"), "--json", env=ENV)
    first_s = time.monotonic() - started
    assert first.code == 0, first.stderr
    first_failed = failures_by_config(first.json())
    assert len(first_failed) == 4

    started = time.monotonic()
    second = kerntune("tune", str(SPECS / "faults_opencl"), "--json", env=ENV)
    assert second.code == 0, second.stderr
    assert failures_by_config(second.json()) == first_failed  # same kinds, recorded again
    reasons = [f["reason"] for f in second.json()["shapes"][0]["failed"]]
    assert all(r.startswith(f"skipped: failed in run {first.json()['run']['id']}") for r in reasons)
    # The hang was not waited for again: the first run waited its 8 s timeout, the second (same work, less the
    # skipped failures) is faster by most of it. Relative to the first run, since this CPU's speed varies.
    assert time.monotonic() - started < first_s - 0.5 * float(ENV["KERNTUNE_CANDIDATE_TIMEOUT_S"])

    ledger = kerntune("ledger", "--json", "--kind", "hang")
    assert ledger.code == 0
    rows = ledger.json()
    assert {r["candidate"] for r in rows} == {"VARIANT=2,LS=64"} and len(rows) == 2

    retried = kerntune("tune", str(SPECS / "faults_opencl"), "--json", "--retry-failed", env=ENV)
    assert retried.code == 0
    assert not any(f["reason"].startswith("skipped") for f in retried.json()["shapes"][0]["failed"])


def test_unknown_failure_kind_is_a_usage_error(kerntune: Callable[..., CliResult]) -> None:
    result = kerntune("ledger", "--kind", "slow")
    assert result.code == 2 and "unknown kind 'slow'" in result.stderr and "pruned" in result.stderr


def test_configs_pruned_by_constraints_are_in_the_ledger(kerntune: Callable[..., CliResult]) -> None:
    run = kerntune("tune", str(EXAMPLES / "opencl_matmul"), "--budget", "1", "--json", env=ENV)
    assert run.code == 0, run.stderr
    rows = kerntune("ledger", "--kind", "pruned", "--json").json()
    assert rows and all(r["failure"] == "pruned" and r["run"] == run.json()["run"]["id"] for r in rows)
    assert any("WPT <= TS" in r["reason"] for r in rows)
    assert all(int(r["candidate"].split()[0]) > 0 for r in rows)
