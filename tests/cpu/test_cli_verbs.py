from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import EXAMPLES, CliResult


@pytest.mark.parametrize("verb", ["tune", "runs", "show", "ledger"])
def test_every_verb_has_help_and_json(verb: str, kerntune: Callable[..., CliResult]) -> None:
    result = kerntune(verb, "--help")
    assert result.code == 0 and "--json" in result.stdout


def test_runs_and_show_after_a_tune(kerntune: Callable[..., CliResult]) -> None:
    pytest.importorskip("pyopencl")
    tuned = kerntune("tune", str(EXAMPLES / "opencl_vector_add"), "--shape", "N=4096", "--budget", "2", "--json")
    assert tuned.code == 0, tuned.stderr
    run_id = tuned.json()["run"]["id"]
    listed = kerntune("runs", "--json")
    assert [r["id"] for r in listed.json()] == [run_id]
    shown = kerntune("show", run_id[:10], "--json")
    assert shown.json()["shapes"][0]["winner"] == tuned.json()["shapes"][0]["winner"]
    table = kerntune("show", "last")
    assert table.code == 0 and "winner" in table.stdout and run_id in table.stdout
