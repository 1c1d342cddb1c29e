"""`kerntune train` on a PoCL sweep: rules by size segment, exact entries only where they beat their rule,
held-out shapes scored through the live Dispatcher, and the bad inputs it refuses."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.runtime.dispatch import Dispatcher
from kerntune.settings import Settings
from tests.conftest import EXAMPLES, CliResult

pytest.importorskip("pyopencl")

FAST = {
    "KERNTUNE_CONFIRM_ROUNDS": "0",
    "KERNTUNE_WARMUP_MS": "20",
    "KERNTUNE_SAMPLE_BUDGET_MS": "60",
    "KERNTUNE_MIN_SAMPLES": "5",
}
SIZES = [1 << p for p in (12, 14, 16, 17, 18, 20)]


def test_train_a_table_from_a_sweep_and_score_it_on_held_out_shapes(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    shapes = [a for n in SIZES for a in ("--shape", f"N={n}")]
    tuned = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), *shapes, "--strategy", "exhaustive", env=FAST)
    assert tuned.code == 0, tuned.stderr
    path = tmp_path / "trained.json"
    done = kerntune("train", "last", "--table", str(path), "--holdout-every", "3", "--by", "N:4", "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    report, table = data["report"], json.loads(path.read_text())
    assert (report["shapes"], report["training_shapes"], report["held_out_shapes"]) == (6, 4, 2)
    assert report["configs"] == 9 and table["training"]["by"] == ["N:4"]
    # Rules: one per work segment of 4 octaves holding training shapes, then the op-wide one; all keyed by op,
    # kernel source and device, so another kernel or device never matches them.
    assert report["rules"] == len(table["rules"]) >= 2 and "N" not in table["rules"][-1]["when"]
    assert all(r["when"]["N"][1] == 16 * r["when"]["N"][0] for r in table["rules"][:-1])
    assert all({"op", "source", "arch", "device_name"} <= r["when"].keys() for r in table["rules"])
    # Exact entries only where the rule lost by more than the noise band; each says by how much.
    assert all(e["rule_regret"] is None or e["rule_regret"] > 0.02 for e in table["entries"])
    held = report["held_out"]
    assert held["coverage"] == 1.0 and held["default"] == 0 and held["unscored"] == 0  # exhaustive: all timed
    assert held["geomean_regret"] >= 0 and held["max_regret"] >= held["geomean_regret"]
    assert {r["shape"]["N"] for r in held["rows"]} <= set(SIZES)
    # The runtime reads the file: an untuned size gets a rule's config, counted as a rule hit.
    fixed = {k: v for k, v in table["rules"][-1]["when"].items()}
    live = Dispatcher(
        path,
        key=lambda n: {"N": n},
        default={"LS": 1, "WPT": 1},
        device=fixed,
        versions=table["validators"],
        settings=Settings(),
    )
    assert live.select(3 << 15) in [r["config"] for r in table["rules"]] and live.stats()["rule"] == 1

    again = kerntune("train", "last", "--table", str(path))
    assert again.code == 2 and "--replace" in again.stderr
    assert kerntune("train", "last", "--table", str(path), "--replace").code == 0


def test_train_refuses_a_single_shape_and_mixed_ops(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    assert kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=4096", env=FAST).code == 0
    one = kerntune("train", "last", "--table", str(tmp_path / "t.json"))
    assert one.code == 2 and "sweeps over many shapes" in one.stderr
    listed = kerntune("history", "--json").json()
    assert kerntune("tune", str(EXAMPLES / "opencl_matmul"), "--shape", "M=64,N=64,K=64", env=FAST).code == 0
    mixed = kerntune("train", listed[0]["id"], "last", "--table", str(tmp_path / "t.json"))
    assert mixed.code == 2 and "train one table per op" in mixed.stderr
