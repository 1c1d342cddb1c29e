"""The measurement protocol on PoCL: regimes recorded, telemetry marked unavailable, graph mode refused with
a reason, and bootstrap intervals stored with every measurement."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import EXAMPLES, CliResult

VECTOR_ADD = str(EXAMPLES / "opencl_vector_add")


@pytest.mark.parametrize("regime", ["warm", "rotating"])
def test_regimes_are_measured_and_recorded(kerntune: Callable[..., CliResult], regime: str) -> None:
    result = kerntune(
        "tune", VECTOR_ADD, "--budget", "2", "--json", env={"KERNTUNE_REGIME": regime, "KERNTUNE_FINALISTS": "0"}
    )
    assert result.code == 0, result.stderr
    measurement = result.json()["shapes"][0]["winner"]["measurement"]
    conditions = measurement["conditions"]
    assert conditions["regime"] == regime and conditions["mode"] == "eager"
    assert conditions["telemetry"] == {"available": False, "reason": conditions["telemetry"]["reason"]}
    assert measurement["ci_low_ms"] <= measurement["median_ms"] <= measurement["ci_high_ms"]
    if regime == "rotating":
        assert conditions["cache_bytes"] > conditions["flush_bytes"] == 0
    else:
        assert conditions["cache_bytes"] == conditions["flush_bytes"] == 0


def test_graph_mode_needs_a_graph_backend_and_a_non_cold_regime(kerntune: Callable[..., CliResult]) -> None:
    cold = kerntune("tune", VECTOR_ADD, "--budget", "1", env={"KERNTUNE_MODE": "graph"})
    assert cold.code == 2 and "--regime warm" in cold.stderr
    warm = kerntune("tune", VECTOR_ADD, "--budget", "1", env={"KERNTUNE_MODE": "graph", "KERNTUNE_REGIME": "warm"})
    assert warm.code == 2 and "no graph mode" in warm.stderr
