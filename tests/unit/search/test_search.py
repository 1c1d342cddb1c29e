from __future__ import annotations

from typing import Any

import pytest

from kerntune.errors import UsageError
from kerntune.model import Config
from kerntune.search import make_strategy

CONFIGS = [Config.of({"X": i}) for i in range(20)]


def _drain(name: str, seed: int = 0) -> list[Config]:
    strategy = make_strategy(name, CONFIGS, seed)
    out = []
    while (c := strategy.ask()) is not None:
        strategy.tell(c, 1.0)
        out.append(c)
    return out


def test_exhaustive_visits_every_config_in_order() -> None:
    assert _drain("exhaustive") == CONFIGS


def test_random_is_a_seeded_permutation() -> None:
    first = _drain("random", seed=3)
    assert sorted(first, key=lambda c: c["X"]) == CONFIGS
    assert first == _drain("random", seed=3)
    assert first != _drain("random", seed=4)
    assert first != CONFIGS


def test_unknown_strategy() -> None:
    with pytest.raises(UsageError, match="unknown strategy"):
        make_strategy("annealing-by-hand", CONFIGS, 0)


# A synthetic landscape (a null workload: no device, no kernel) with one best point, for strategy logic only.
GRID = [
    Config.of({"BM": bm, "BN": bn, "W": w})
    for bm in (16, 32, 64, 128, 256)
    for bn in (16, 32, 64, 128, 256)
    for w in (1, 2, 4, 8)
]


def _cost(c: Config) -> float:
    return (
        1.0
        + abs(int(c["BM"]).bit_length() - 7) * 0.3
        + abs(int(c["BN"]).bit_length() - 8) * 0.2
        + abs(int(c["W"]).bit_length() - 3) * 0.1
    )


def _run(name: str, seed: int = 0, budget: int = 1000, start: Config | None = None) -> list[Config]:
    strategy = make_strategy(name, GRID, seed, start)
    seen: list[Config] = []
    while len(seen) < budget and (c := strategy.ask()) is not None:
        strategy.tell(c, _cost(c))
        seen.append(c)
    return seen


def test_lever_changes_one_parameter_at_a_time_from_the_start() -> None:
    start = GRID[0]
    seen = _run("lever", start=start)
    assert seen[0] == start and len(seen) == 1 + 4 + 4 + 3
    assert all(sum(a != b for (_, a), (_, b) in zip(c.items, start.items, strict=True)) == 1 for c in seen[1:])


def test_coordinate_search_reaches_the_best_of_a_separable_landscape_cheaply() -> None:
    seen = _run("coordinate", start=GRID[0])
    best = min(GRID, key=_cost)
    assert best in seen and len(seen) < len(GRID) // 3
    assert len({c.key for c in seen}) == len(seen)  # never the same config twice


def test_tpe_is_seeded_finds_a_near_best_config_and_ends() -> None:
    first = _run("tpe", seed=1, budget=40)
    assert first == _run("tpe", seed=1, budget=40)
    assert len({c.key for c in first}) == len(first)
    assert min(_cost(c) for c in first) <= min(_cost(c) for c in GRID) * 1.02
    everything = _run("tpe", seed=2)
    assert sorted(c.key for c in everything) == sorted(c.key for c in GRID)  # exhausts, then stops


def test_plateau_stops_after_three_rounds_under_two_percent() -> None:
    from kerntune.search.stopping import Plateau

    rule = Plateau(round_size=2)
    improving = [10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0]
    assert all(rule.add(x) is None for x in improving)  # every round gains more than 2%
    flat = [3.0, 2.99, 3.1, 2.98, 3.0, 3.0]
    reasons = [rule.add(x) for x in flat]
    assert reasons[:-1] == [None] * 5 and reasons[-1] is not None and reasons[-1].startswith("plateau")
    failures = Plateau(round_size=1, rounds=1)
    assert failures.add(None) is None and failures.add(None) is None  # no timed result: nothing to compare


@pytest.mark.parametrize("name", ["cmaes", "local"])
def test_model_based_and_local_searches_are_seeded_find_a_near_best_config_and_end(name: str) -> None:
    first = _run(name, seed=1, budget=40)
    assert first == _run(name, seed=1, budget=40)
    assert len({c.key for c in first}) == len(first)
    assert min(_cost(c) for c in first) <= min(_cost(c) for c in GRID) * 1.05
    assert sorted(c.key for c in _run(name, seed=2)) == sorted(c.key for c in GRID)  # exhausts, then stops


def _race(seed: int, ahead: int = 1, stop_after: int | None = None) -> tuple[list[tuple[Config, int | None]], Any]:
    """Drive a race as the tuner does: up to ``ahead`` proposals in flight, each told its rung-free cost."""
    race = make_strategy("race", GRID, seed)
    seen: list[tuple[Config, int | None]] = []
    window: list[Config] = []
    while True:
        if stop_after is not None and len({c.key for c, _ in seen}) >= stop_after and race.wind_down("budget"):
            for c in window:
                race.tell(c, None)
            window, stop_after = [], None
        while len(window) < ahead and (c := race.ask()) is not None:
            window.append(c)
        if not window:
            return seen, race
        c = window.pop(0)
        seen.append((c, race.rung(c)))
        race.tell(c, _cost(c))


def test_race_screens_many_briefly_then_gives_few_the_full_protocol() -> None:
    seen, race = _race(seed=0, ahead=8)
    screened = [c for c, rung in seen if rung == 0]
    middle = [c for c, rung in seen if rung == 1]
    full = [c for c, rung in seen if rung is None]
    assert len(middle) == -(-len(screened) // 4) and 2 <= len(full) <= 8  # the best quarter, then at most 8
    assert {c.key for c in full} <= {c.key for c in middle} <= {c.key for c in screened}
    assert min(full, key=_cost) == min(GRID, key=_cost)  # the best of the landscape survives the race
    assert race.stop_reason.startswith("screening plateau")


def test_a_race_out_of_budget_still_measures_its_survivors() -> None:
    seen, race = _race(seed=3, ahead=4, stop_after=12)
    assert len({c.key for c, rung in seen if rung == 0}) <= 12 + 4
    assert [c for c, rung in seen if rung is None], "no full measurement: the run would end without a result"
    assert race.stop_reason == "screening ended: budget"


def test_auto_races_large_timed_spaces_and_times_small_ones_exhaustively() -> None:
    from kerntune.search import resolve_strategy

    assert resolve_strategy("auto", 500, timed=True) == "race"
    assert resolve_strategy("auto", 30, timed=True) == "exhaustive"
    assert resolve_strategy("auto", 500, timed=False) == "exhaustive"  # a race ranks by time
    assert resolve_strategy("tpe", 5, timed=True) == "tpe"


@pytest.mark.parametrize("name", ["local", "race", "random"])
def test_the_start_then_the_spec_seeds_come_first(name: str) -> None:
    start, seeds = GRID[37], [GRID[5], GRID[80], GRID[5], Config.of({"BM": 3, "BN": 3, "W": 3})]
    strategy = make_strategy(name, GRID, 1, start, seeds)
    asked = [strategy.ask() for _ in range(3)]
    # Duplicates and configs outside the valid set are dropped; random has no start, only the seeds.
    expected = [start, GRID[5], GRID[80]] if name != "random" else [GRID[5], GRID[80]]
    assert asked[: len(expected)] == expected
    assert len({c.key for c in asked if c is not None}) == len(asked)


def test_seed_configs_are_completed_from_the_default() -> None:
    from kerntune.model import Space

    space = Space(params={"A": [1, 2], "B": [3, 4]}, default={"A": 1, "B": 4}, seeds=[{"A": 2}, {"B": 3}])
    assert space.seed_configs() == [Config.of({"A": 2, "B": 4}), Config.of({"A": 1, "B": 3})]


@pytest.mark.parametrize("window", [0, 30])
@pytest.mark.parametrize("stop_after", [1, 5, 12, 40])
def test_a_race_says_beforehand_what_winding_down_will_still_measure(stop_after: int, window: int) -> None:
    # What the tuner budgets for once it stops the race: the count per rung must be what the race then runs. The
    # tuner asks a compile-ahead window of proposals before it tells them, and drops the unscreened on stopping.
    race = make_strategy("race", GRID, 3)
    screened: list[Config] = []
    asked: list[Config] = []
    while len(screened) < stop_after:
        while len(asked) < window + 1 and (c := race.ask()) is not None:
            asked.append(c)
        c = asked.pop(0)
        race.tell(c, _cost(c))
        screened.append(c)
    said = race.wind_down_evaluations()
    assert race.wind_down("budget")
    for dropped in asked:
        race.tell(dropped, None)
    ran: dict[int | None, int] = {}
    while (c := race.ask()) is not None:
        ran[race.rung(c)] = ran.get(race.rung(c), 0) + 1
        race.tell(c, _cost(c))
    assert said == ran and said[1] == max(-(-len(screened) // 4), min(len(screened), 2)) and said[None] <= 8
    assert race.wind_down_evaluations() == {}  # the race is over: nothing left to wind down
