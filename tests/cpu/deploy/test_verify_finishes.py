"""``kerntune verify`` finishes: a table that serves nothing is said as such with its counts (exit 0, no A/B), and
``--budget`` bounds the end-to-end A/B, reusing a stored A/A band for the program and reporting the interval the
pairs reached."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.deploy.verify import budget_seconds
from kerntune.errors import UsageError
from tests.conftest import DATA, KERNELS, CliResult

pytest.importorskip("torch")

# Each run takes at least 0.3 s, so two pairs (four runs) outlast a 1 s budget whatever the machine's speed.
DISPATCHED = """
import random, sys, time
from kerntune.runtime import Dispatcher
time.sleep(0.3)
d = Dispatcher(sys.argv[1], key=lambda n: {"op": "k", "N": n}, default={"B": 1}, versions={}, name="k")
for n in (4, 4, 8):
    d.select(n)
print(f"metric {1.0 + random.random() * 0.01:.5f}")
"""


def test_a_program_with_no_dispatcher_serves_nothing_and_exits_0(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    program = tmp_path / "plain.py"
    program.write_text("print('metric 1.0')\n")
    seen = kerntune("verify", "--json", "--", sys.executable, str(program))  # no --no-ab: there is no A/B to run
    assert seen.code == 0, seen.stderr
    found = seen.json()
    assert found["serves_nothing"].startswith("no kerntune Dispatcher was created")
    assert found["calls"] == 0 and "end_to_end" not in found
    said = kerntune("verify", "--", sys.executable, str(program))
    assert said.code == 0 and "no kerntune Dispatcher was created" in said.stdout


def test_a_table_all_left_to_the_library_serves_nothing_and_exits_0(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    pytest.importorskip("triton")
    from kerntune.runtime.keys import problem_source_hash
    from kerntune.runtime.serving import cpu_device_fields, load_served_spec

    problem = load_served_spec(KERNELS / "triton_gemm")
    key = {"op": problem.name, "source": problem_source_hash(problem), "dtype": "float16", **cpu_device_fields()}
    config = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 1, "FUSED": 0, "TMA": 0}
    entry = {
        "key": {**key, "M": 32, "N": 64, "K": 64, "layout": "NT", "bias": 1},
        "config": {**config, "PERSISTENT": 0, "num_warps": 4, "num_stages": 2},
        "library_faster": {"why": "the winner is not faster than torch.matmul"},
    }
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"schema": 1, "entries": [entry]}))
    served = ["kerntune", "run", "--table", str(table), "--backend", "CPU", "--spec-dir", str(KERNELS), "--"]
    app = str(DATA / "served" / "linear_app.py")
    seen = kerntune("verify", "--json", "--", *served, "python", app, env={"TRITON_INTERPRET": "1"})
    assert seen.code == 0, seen.stderr
    found = seen.json()
    assert "1 entries left to the library" in found["serves_nothing"] and "end_to_end" not in found
    assert found["served_ops"] == {}  # no spec had a key to serve: no operator overridden, the library's own calls


def test_the_budget_bounds_the_ab_and_a_stored_band_is_reused(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"schema": 1, "entries": [{"key": {"op": "k", "N": 4}, "config": {"B": 2}}]}))
    program = tmp_path / "dispatched.py"
    program.write_text(DISPATCHED)
    command = ["--json", "--", sys.executable, str(program), str(table)]
    first = kerntune("verify", "--budget", "1s", *command)  # ends before an A/A band could be measured
    assert first.code == 0, first.stderr
    e2e = first.json()["end_to_end"]
    assert e2e["pairs"] == 2 and e2e["budget_s"] == 1.0 and e2e["ci"][0] <= e2e["ratio"] <= e2e["ci"][1]
    assert "the budget of 1 s ended" in e2e["reason"] and "none: the budget ended first" in e2e["reason"]

    calibrated = kerntune("verify", "--processes", "2", "--budget", "10m", *command)  # time for an A/A band
    assert calibrated.code == 0, calibrated.stderr
    assert "budget" not in calibrated.json()["end_to_end"]["reason"]
    again = kerntune("verify", "--budget", "1s", *command)
    band = again.json()["end_to_end"]["reason"]
    assert "(A/A ab-" in band and "none: the budget ended first" not in band  # the stored band, reused


@pytest.mark.parametrize(("text", "seconds"), [("180s", 180.0), ("3m", 180.0), ("1h", 3600.0), ("90", 90.0)])
def test_budget_text(text: str, seconds: float) -> None:
    assert budget_seconds(text) == seconds


@pytest.mark.parametrize("text", ["0s", "-5s", "nan", "inf", "9" * 400, "3 days", ""])
def test_a_bad_budget_is_one_clear_error(text: str) -> None:
    with pytest.raises(UsageError, match="--budget"):
        budget_seconds(text)
