"""The Kernel Tuner bridge on real cache files (tests/data/kernel_tuner: made by Kernel Tuner 1.5.0 on PoCL,
see make_cache.py there): import keeps every raw sample, export writes a cache Kernel Tuner's format holds,
and the two round-trip."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, CliResult

DATA = Path(__file__).resolve().parents[2] / "data" / "kernel_tuner"
CACHE = DATA / "vector_add_pocl.json"


def test_import_keeps_every_sample_and_export_round_trips_the_cache(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    original = json.loads(CACHE.read_text())
    done = kerntune("import-kt", str(CACHE), "--shape", "N", "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert (data["configs"], data["failed"], data["kernel"]) == (11, 0, "vector_add")
    assert data["shape"] == {"N": original["problem_size"]}
    for row in data["rows"]:  # the median and spread of the 7 samples Kernel Tuner averaged
        entry = original["cache"][row["config"].replace("block_size_x=", "").replace("WPT=", "")]
        assert row["median_ms"] == pytest.approx(statistics.median(entry["times"]))
        assert row["kt_time_ms"] == entry["time"] and row["samples"] == len(entry["times"]) == 7
    shown = kerntune("show", data["run"], "--json")
    assert shown.code == 0, shown.stderr
    winner = shown.json()["shapes"][0]["winner"]["config"]
    assert ",".join(f"{k}={v}" for k, v in winner.items()) == data["best_by_median"]["config"]

    out = tmp_path / "exported.json"
    assert kerntune("export-kt", data["run"], "-o", str(out)).code == 0
    exported = json.loads(out.read_text())
    for key in ("device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params", "objective"):
        assert exported[key] == original[key], key
    assert exported["cache"].keys() == original["cache"].keys()
    for key, entry in original["cache"].items():
        mine = exported["cache"][key]
        assert mine["times"] == entry["times"] and mine["time"] == pytest.approx(entry["time"], rel=1e-12)
        assert {k: mine[k] for k in original["tune_params_keys"]} == {k: entry[k] for k in original["tune_params_keys"]}
    again = kerntune("import-kt", str(out), "--shape", "N", "--json").json()
    assert sorted(r["median_ms"] for r in again["rows"]) == sorted(r["median_ms"] for r in data["rows"])


def test_an_unfinished_cache_is_read_as_kernel_tuner_reads_it(kerntune: Callable[..., CliResult]) -> None:
    done = kerntune("import-kt", str(DATA / "vector_add_pocl_unfinished.json"), "--json")
    assert done.code == 0, done.stderr
    assert done.json()["configs"] == 3 and done.json()["shape"] == {"x": 1048576}


def test_bad_caches_and_a_multi_shape_export_are_refused(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"cache": {')
    result = kerntune("import-kt", str(broken))
    assert result.code == 2 and "not a Kernel Tuner cache file" in result.stderr
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"cache": {}}))
    result = kerntune("import-kt", str(other))
    assert result.code == 2 and "no device_name, kernel_name, problem_size, tune_params_keys" in result.stderr
    result = kerntune("import-kt", str(CACHE), "--shape", "M,N")
    assert result.code == 2 and "has 1 dimensions" in result.stderr
    run = kerntune("import-kt", str(CACHE), "--json").json()["run"]
    out = tmp_path / "missing" / "cache.json"
    unwritable = kerntune("export-kt", run, "-o", str(out))
    assert unwritable.code == 2 and unwritable.stderr.strip() == f"kerntune: error: {out}: No such file or directory"


def test_a_kerntune_run_exports_as_a_cache(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    fast = {"KERNTUNE_CONFIRM_ROUNDS": "0", "KERNTUNE_WARMUP_MS": "10", "KERNTUNE_SAMPLE_BUDGET_MS": "40"}
    tuned = kerntune(
        "tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=65536", "--strategy", "exhaustive", env=fast
    )
    assert tuned.code == 0, tuned.stderr
    out = tmp_path / "cache.json"
    assert kerntune("export-kt", "last", "-o", str(out)).code == 0
    data = json.loads(out.read_text())
    assert data["kernel_name"] == "opencl_vector_add" and data["problem_size"] == 65536
    assert data["tune_params_keys"] == ["LS", "WPT"] and len(data["cache"]) == 9  # the default (a baseline) too
    entry = next(iter(data["cache"].values()))
    assert entry["time"] == pytest.approx(statistics.fmean(entry["times"])) and entry["kerntune_median"] > 0
