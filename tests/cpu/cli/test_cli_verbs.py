from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import EXAMPLES, CliResult


@pytest.mark.parametrize("verb", ["tune", "history", "show", "ledger"])
def test_every_verb_has_help_and_json(verb: str, kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(verb, "--help")
    assert result.code == 0 and "--json" in result.stdout


def test_history_and_show_after_a_tune(kerntune: Callable[..., CliResult]) -> None:
    pytest.importorskip("pyopencl")
    tuned = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=4096", "--budget", "2", "--json")
    assert tuned.code == 0, tuned.stderr
    run_id = tuned.json()["run"]["id"]
    listed = kerntune("history", "--json")
    assert [r["id"] for r in listed.json()] == [run_id]
    shown = kerntune("show", run_id[:10], "--json")
    assert shown.json()["shapes"][0]["winner"] == tuned.json()["shapes"][0]["winner"]
    table = kerntune("show", "last")
    assert table.code == 0 and "winner" in table.stdout and run_id in table.stdout


def test_floor_record_and_check(tmp_path, kerntune: Callable[..., CliResult]) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyopencl")
    tuned = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=4096", "--budget", "2", "--json")
    assert tuned.code == 0, tuned.stderr
    floors = tmp_path / "cpu-pocl.txt"
    assert kerntune("floor", "record", "last", "--file", str(floors)).code == 0
    assert kerntune("floor", "check", "last", "--file", str(floors)).code == 0
    key, value = floors.read_text().strip().splitlines()[-1].rsplit("=", 1)
    floors.write_text(floors.read_text().replace(f"{key}={value}", f"{key}= {float(value) / 2}"))
    failed = kerntune("floor", "check", "last", "--file", str(floors), "--json")
    assert failed.code == 1 and failed.json()[0]["verdict"] == "FAIL"
    missing = kerntune("floor", "check", "last", "--file", str(tmp_path / "none.txt"))
    assert missing.code == 2 and "does not exist" in missing.stderr
