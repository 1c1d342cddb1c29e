"""How a time budget is shared: each shape searches for at most the per-shape bound and its even part of what the
searches have left (early shapes that overran never leave the later ones nothing), a fresh race's wind-down is
priced at screening costs (on the H200, 20 shapes at 12 s/shape, pricing it at the full protocol left fourteen
shapes their baselines only), confirmation's first pass is reserved at the costs measured, and a comparison
running past the bound is stopped there; a search is not stopped on predicted costs before it has timed a few
configs."""

from __future__ import annotations

import time
from types import MethodType, SimpleNamespace

from kerntune.exec.pool import Outcome
from kerntune.model import Budget
from kerntune.model.time_plan import TimePlan
from kerntune.search.compile_ahead import CompileAhead
from kerntune.settings import Settings
from kerntune.tune.clock import RunClock


def _tuner(
    elapsed: float,
    *,
    shapes: int = 20,
    per_shape: float | None = 12.0,
    run_s: float | None = None,
    start_up_s: float = 5.0,
    full_evaluation_s: float = 1.5,
) -> SimpleNamespace:
    plan = TimePlan.of(Budget(seconds=run_s, shape_seconds=per_shape), shapes, confirms=True)
    fake = SimpleNamespace(
        plan=plan,
        run=SimpleNamespace(shapes=[None] * shapes),
        start_up_s=start_up_s,
        full_evaluation_s=full_evaluation_s,
        elapsed=lambda: elapsed,
        settings=Settings(),
    )
    fake.search_end_s = MethodType(RunClock.search_end_s, fake)
    return fake


def spent(fake: SimpleNamespace, begun_s: float, later: int, next_s: float = 1.0) -> str:
    return str(RunClock.search_spent(fake, begun_s, later, next_s))  # type: ignore[arg-type]


def test_a_shape_searches_until_its_per_shape_share() -> None:
    # 12 s/shape with confirmation: 9 s of each shape's own to search, 180 s for all searches.
    assert spent(_tuner(7.0), begun_s=0.0, later=19) == ""
    assert (
        spent(_tuner(8.5), begun_s=0.0, later=19) == "time budget reached (9 s of 12 s per shape to search, "
        "the rest to confirm)"
    )


def test_shapes_after_an_overrun_share_what_is_left_evenly() -> None:
    # Five shapes took 100 s; the sixth starts with fourteen after it: (180 - 100) / 15 = 5.3 s each, not 0.
    assert spent(_tuner(104.0), begun_s=100.0, later=14) == ""
    assert spent(_tuner(104.5), begun_s=100.0, later=14).startswith("time budget reached")
    # The last shape has what is left, up to its own bound.
    assert spent(_tuner(170.0), begun_s=165.0, later=0) == ""
    assert spent(_tuner(178.5), begun_s=170.0, later=0).startswith("time budget reached")


def test_a_run_budget_is_shared_by_the_shapes_too() -> None:
    # --budget 100s for 4 shapes: 75 s to search, start-up counted (the run's clock starts with the command).
    assert spent(_tuner(20.0, shapes=4, per_shape=None, run_s=100.0), begun_s=5.0, later=3) == ""
    assert (
        spent(_tuner(22.0, shapes=4, per_shape=None, run_s=100.0), begun_s=5.0, later=3)
        == "time budget reached (75 s of 100 s for the run to search, the rest to confirm)"
    )


def test_confirmation_first_pass_is_reserved_at_the_costs_measured() -> None:
    # A slow host: a fresh worker starts in 30 s and a full evaluation takes 4 s. Confirmation's first pass: the
    # start, a first comparison of two candidates each timed by both timers (16 s), then 4 s for each of the other
    # 19 shapes: 122 s of the 240 s, so the searches end at 118 s, shared evenly from there.
    fake = _tuner(0.0, start_up_s=30.0, full_evaluation_s=4.0)
    assert fake.search_end_s() == 118.0
    assert spent(_tuner(59.0, start_up_s=30.0, full_evaluation_s=4.0), begun_s=55.0, later=10) == ""
    assert spent(_tuner(60.0, start_up_s=30.0, full_evaluation_s=4.0), begun_s=55.0, later=10) != ""


def test_a_fresh_race_prices_its_wind_down_at_the_runs_screening_costs() -> None:
    # A shape that has screened nothing yet: its race's start config would still go through every rung. Priced at
    # the run's screening mean (0.1 s) rising to the full protocol's (1.2 s), not at 1.2 s a rung.
    from kerntune.model import Config, Shape
    from kerntune.search import make_strategy
    from kerntune.search.shape_search import ShapeSearch

    configs = [Config.of({"X": i}) for i in range(200)]
    host = SimpleNamespace(full_evaluation_s=1.2, screening_evaluation_s=0.1)
    race = make_strategy("race", configs, 0, configs[0])
    search = ShapeSearch(host, Shape.of({"N": 1}), race, None, {}, {})  # type: ignore[arg-type]
    assert race.ask() == configs[0]  # the start config under way at rung 0
    assert race.wind_down_evaluations() == {}  # stopped now, the unscreened start config is dropped
    assert sum(race.wind_down_evaluations(1).values()) == 2  # once it is screened: rung 1, then the full protocol
    cost = search._wind_down_s()
    assert 0 < cost < 1.2 * 2 * 0.75, cost


def test_a_comparison_running_past_the_bound_is_stopped_there_and_fails_no_one() -> None:
    from kerntune.exec.pool import Outcome
    from kerntune.tune import confirm

    calls: list[tuple[float, bool]] = []

    class Worker:
        def call(self, path: str, payload: dict[str, object], timeout_s: float, *, restart: bool = True) -> Outcome:
            calls.append((timeout_s, restart))
            return Outcome("failed", kind="hang", reason=f"no answer within {timeout_s:g} s; worker killed")

    host = SimpleNamespace(time_left=lambda: 2.5, start_up_s=1.0, full_evaluation_s=1.0, settings=Settings())
    clock = confirm._Clock(host)  # type: ignore[arg-type]
    assert clock.call_limit_s(120.0) == (2.5, True) and confirm._Clock(
        SimpleNamespace(
            time_left=lambda: None,
            start_up_s=1.0,
            full_evaluation_s=1.0,  # type: ignore[arg-type]
            settings=Settings(),
        )
    ).call_limit_s(120.0) == (120.0, False)
    try:
        confirm._call(Worker(), "path", {}, 120.0, clock)  # type: ignore[arg-type]
    except confirm._OutOfTime:
        pass
    else:
        raise AssertionError("a call stopped by the bound must end confirmation")
    assert calls == [(2.5, False)]  # stopped at the bound, not restarted (the round ends)
    # Without a bound a hang is the candidate's own failure, as ever.
    assert confirm._call(Worker(), "path", {}, 120.0, None).kind == "hang" and calls[-1] == (120.0, True)


class _SlowStart:
    """A compile worker whose start takes ``start_s`` (loading torch and the compiler) and whose calls never run."""

    def __init__(self, start_s: float) -> None:
        self.name, self.start_s = "slow", start_s

    def start(self) -> None:
        time.sleep(self.start_s)

    def call(self, path: str, payload: dict[str, object], timeout_s: float, *, restart: bool = True) -> Outcome:
        raise AssertionError("nothing was submitted")

    def stop(self) -> None:
        pass


def test_a_shape_waits_for_the_compile_pool_as_start_up_not_as_its_share() -> None:
    with CompileAhead([_SlowStart(0.3), _SlowStart(0.05)], timeout_s=5.0) as ahead:
        waited = ahead.wait_started(timeout_s=5.0)
        assert 0.2 <= waited < 2.0  # the slower worker's start, not the faster's
        assert ahead.wait_started(timeout_s=5.0) < 0.05  # a pool already up costs nothing
    for per_shape, run_s in ((12.0, None), (None, 240.0)):
        plan = TimePlan.of(Budget(seconds=run_s, shape_seconds=per_shape), 20, confirms=True)
        clock = RunClock(SimpleNamespace(elapsed_s=0.0), Settings(), plan, started=time.monotonic() - 10.0)  # type: ignore[arg-type]
        before = clock.elapsed()
        begun = clock.add_start_up(3.0, begun_s=1.0)
        # The shape's time so far shrinks by the wait either way: a per-shape clock excludes start-up (it moves
        # back), a run's clock counts it (the shape's start moves on).
        assert abs((clock.elapsed() - begun) - (before - 1.0 - 3.0)) < 0.05
        assert clock.phases["pool_start_s"] == 3.0 and clock.phases["search_s"] == -3.0


def test_a_search_is_not_stopped_on_predicted_costs_before_it_has_timed_a_few_configs() -> None:
    # A run's first evaluations pay one-time costs: priced from them, a first shape's wind-down filled its share
    # and it stopped after one config (the H200, 12 s/shape). Until MIN_SCREENED configs only the share, reached,
    # stops the search; then the next evaluation and the wind-down are priced again.
    from kerntune.model import Config, Shape
    from kerntune.search import make_strategy
    from kerntune.search.shape_search import MIN_SCREENED, ShapeSearch

    asked: list[tuple[float, bool]] = []
    configs = [Config.of({"X": i}) for i in range(200)]
    host = SimpleNamespace(
        full_evaluation_s=4.0,
        screening_evaluation_s=4.0,
        evaluation_s=4.0,
        run=SimpleNamespace(budget=Budget(shape_seconds=12.0)),
        search_spent=lambda begun, later, next_s, predicted=True: asked.append((next_s, predicted)) or "",
    )
    search = ShapeSearch(host, Shape.of({"N": 1}), make_strategy("race", configs, 0, configs[0]), None, {}, {})  # type: ignore[arg-type]
    search.evaluated.update(c.key for c in configs[: MIN_SCREENED - 1])
    assert search._budget_spent() == "" and asked == [(0.0, False)]  # nothing predicted: the plan's share
    search.evaluated.add(configs[MIN_SCREENED].key)
    search._budget_spent()
    assert asked[-1][0] >= 4.0 and asked[-1][1]  # priced again: the next evaluation at least, the predicted end


def test_the_plans_share_not_a_predicted_one_holds_until_a_shape_has_screened_a_few() -> None:
    # PoCL on a 2-core host, 2 shapes at 6 s/shape: the run's first full evaluation (1.6 s, a fresh worker's first
    # build in it) priced confirmation's first pass so high that the searches' end came at 3 s, and the first
    # shape's even part (1.5 s) was gone with its baseline: it searched nothing. The plan's share is 4.5 s each.
    fake = _tuner(1.62, shapes=2, per_shape=6.0, start_up_s=1.0, full_evaluation_s=1.6)
    assert RunClock.search_spent(fake, 0.0, 1, 0.0) != ""  # type: ignore[arg-type]
    assert RunClock.search_spent(fake, 0.0, 1, 0.0, predicted=False) == ""  # type: ignore[arg-type]
    late = _tuner(4.6, shapes=2, per_shape=6.0, start_up_s=1.0, full_evaluation_s=1.6)
    assert RunClock.search_spent(late, 0.0, 1, 0.0, predicted=False).startswith("time budget reached")  # type: ignore[arg-type]
