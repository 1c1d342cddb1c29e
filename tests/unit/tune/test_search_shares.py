"""How a time budget's search time is shared by the shapes: each shape has the per-shape bound and at most its even
part of what the searches have left, so early shapes that overran never leave the later ones nothing (on the
H200, 20 shapes at 12 s/shape: six searched, fourteen ran their baselines only)."""

from __future__ import annotations

from types import MethodType, SimpleNamespace

from kerntune.model import Budget
from kerntune.model.time_plan import TimePlan
from kerntune.tune.run import _Tuner


def _tuner(elapsed: float, *, shapes: int = 20, per_shape: float | None = 12.0, run_s: float | None = None,
           start_up_s: float = 5.0, full_evaluation_s: float = 1.5) -> SimpleNamespace:
    plan = TimePlan.of(Budget(seconds=run_s, shape_seconds=per_shape), shapes, confirms=True)
    fake = SimpleNamespace(plan=plan, run=SimpleNamespace(shapes=[None] * shapes), start_up_s=start_up_s,
                           full_evaluation_s=full_evaluation_s, elapsed=lambda: elapsed)
    fake.search_end_s = MethodType(_Tuner.search_end_s, fake)
    return fake


def spent(fake: SimpleNamespace, begun_s: float, later: int, next_s: float = 1.0) -> str:
    return str(_Tuner.search_spent(fake, begun_s, later, next_s))  # type: ignore[arg-type]


def test_a_shape_searches_until_its_per_shape_share() -> None:
    # 12 s/shape with confirmation: 9 s of each shape's own to search, 180 s for all searches.
    assert spent(_tuner(7.0), begun_s=0.0, later=19) == ""
    assert spent(_tuner(8.5), begun_s=0.0, later=19) == "time budget reached (9 s of 12 s per shape to search, " \
                                                         "the rest to confirm)"


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
    assert spent(_tuner(22.0, shapes=4, per_shape=None, run_s=100.0), begun_s=5.0, later=3) \
        == "time budget reached (75 s of 100 s for the run to search, the rest to confirm)"


def test_confirmation_first_pass_is_reserved_at_the_costs_measured() -> None:
    # A slow host: a fresh worker starts in 30 s and a full evaluation takes 4 s, so 20 shapes' first pass needs
    # 110 s of the 240 s: the searches end at 130 s, shared evenly from there.
    fake = _tuner(0.0, start_up_s=30.0, full_evaluation_s=4.0)
    assert fake.search_end_s() == 130.0
    assert spent(_tuner(60.0, start_up_s=30.0, full_evaluation_s=4.0), begun_s=55.0, later=10) == ""
    assert spent(_tuner(61.0, start_up_s=30.0, full_evaluation_s=4.0), begun_s=55.0, later=10) != ""
