from __future__ import annotations

import pytest

from kerntune.cli.app import parse_shape
from kerntune.errors import UsageError
from kerntune.model import Budget
from kerntune.settings import Settings


def test_parse_shape() -> None:
    assert parse_shape("M=16, N=4096") == {"M": "16", "N": "4096"}
    for bad in ("M", "=3", "M=", ""):
        with pytest.raises(UsageError):
            parse_shape(bad)


def test_budget_parse() -> None:
    assert Budget.parse(["100"]) == Budget(100, None)
    assert Budget.parse(["90s"]) == Budget(None, 90.0)
    assert Budget.parse(["50,2m"]) == Budget(50, 120.0)
    assert Budget.parse(["30s/shape", "200"]) == Budget(200, None, 30.0)
    assert Budget.parse(["1m/shape,1h"]) == Budget(None, 3600.0, 60.0)
    assert Budget.parse([]) == Budget()
    for bad in ("0", "1.5", "ten", "-3", "0s/shape", "30/shape", "30s/run"):
        with pytest.raises(UsageError):
            Budget.parse([bad])


def test_settings_from_env() -> None:
    s = Settings.from_env({"KERNTUNE_CANDIDATE_TIMEOUT_S": "5", "KERNTUNE_MIN_SAMPLES": "3"})
    assert s.candidate_timeout_s == 5.0 and s.min_samples == 3
    with pytest.raises(UsageError, match="KERNTUNE_MIN_SAMPLES"):
        Settings.from_env({"KERNTUNE_MIN_SAMPLES": "many"})
    with pytest.raises(UsageError, match="at least 2"):
        Settings.from_env({"KERNTUNE_GATE_SEEDS": "1"})


def test_flush_size_is_twice_the_cache_unless_set() -> None:
    assert Settings.from_env({}).flush_bytes(50 << 20, 64 << 20) == 100 << 20
    assert Settings.from_env({}).flush_bytes(8 << 20, 64 << 20) == 64 << 20
    assert Settings.from_env({"KERNTUNE_FLUSH_MB": "256"}).flush_bytes(50 << 20, 64 << 20) == 256 << 20
    with pytest.raises(UsageError, match="KERNTUNE_FLUSH_MB"):
        Settings.from_env({"KERNTUNE_FLUSH_MB": "-1"})
