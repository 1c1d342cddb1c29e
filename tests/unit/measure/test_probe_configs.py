"""A calibration probe at its own best config: every config screened briefly, only the fastest timed in full."""

from __future__ import annotations

from collections.abc import Callable

from kerntune.measure.probes import FULL_MS, SCREEN_MS, fastest


def test_the_fastest_screened_config_is_the_one_timed_in_full() -> None:
    asked: list[tuple[str, float]] = []

    def timer(name: str, ms: float) -> Callable[[float], float]:
        def time(budget_ms: float) -> float:
            asked.append((name, budget_ms))
            return ms if budget_ms == SCREEN_MS else ms / 2  # the full measurement differs from the screen

        return time

    found = fastest(
        {
            "local=driver": timer("local=driver", 3.0),
            "local=64": timer("local=64", 2.0),
            "local=256": timer("local=256", 2.5),
        }
    )
    assert found == (1.0, "local=64")
    assert asked == [
        ("local=driver", SCREEN_MS),
        ("local=64", SCREEN_MS),
        ("local=256", SCREEN_MS),
        ("local=64", FULL_MS),
    ]
