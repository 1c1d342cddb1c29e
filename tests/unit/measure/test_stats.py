"""The statistics under measurements and A/B verdicts, on data whose answer is known."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from kerntune.compare.ab import abba, claim_holds, verdict_for
from kerntune.measure.stats import (
    RatioEstimate,
    abba_block_logs,
    block_half_width,
    bootstrap_median_ci,
    pair_ratio,
    paired_log_ratio,
    ratio_ci,
)


def test_median_ci_contains_the_median_and_narrows_with_more_samples() -> None:
    rng = random.Random(1)
    small = [1.0 + rng.gauss(0, 0.05) for _ in range(20)]
    large = [1.0 + rng.gauss(0, 0.05) for _ in range(2000)]
    lo_s, hi_s = bootstrap_median_ci(small)
    lo_l, hi_l = bootstrap_median_ci(large)
    assert lo_s <= sorted(small)[10] <= hi_s
    assert hi_l - lo_l < (hi_s - lo_s) / 3
    assert bootstrap_median_ci([2.0] * 50) == (2.0, 2.0)


def test_block_half_width_grows_when_blocks_disagree() -> None:
    steady = block_half_width([1.0, 1.001, 0.999, 1.0, 1.0005])
    swinging = block_half_width([1.0, 1.04, 0.97, 1.03, 0.98])
    assert steady < 0.002 < swinging
    assert block_half_width([1.0]) == math.inf


def _carryover_pairs(n: int, seed: int) -> list[tuple[float, float]]:
    """Pairs in A B B A order where a launch after the other side's runs slower than one after its own (the H200's
    fused split-K against torch.matmul, 2026-12-04): A 15.4 µs after A, 15.6 after B; B 18.0 µs after B, and
    19.3 after A with ±5% of spread."""
    rng = random.Random(seed)
    return [(15.4, 19.3 * (1 + rng.uniform(-0.05, 0.05))) if k % 2 == 0 else (15.6, 18.0) for k in range(n)]


def test_a_side_by_side_ratio_cancels_the_carryover_of_the_launch_before() -> None:
    pairs = _carryover_pairs(200, 3)
    symmetric = (19.3 + 18.0) / (15.4 + 15.6)  # each side once after the other and once after itself
    per_pair = math.exp(statistics.median(math.log(b / a) for a, b in pairs))  # the median of pairs, for contrast
    assert abs(per_pair / symmetric - 1) > 0.01  # the hazard is in the data: pairs fall into two groups
    assert abs(math.exp(paired_log_ratio([a for a, _ in pairs], [b for _, b in pairs])) / symmetric - 1) < 0.005
    found = pair_ratio(pairs)
    assert found["blocks"] == 100 and found["pairs"] == 200
    assert found["ci"][0] < symmetric < found["ci"][1] and abs(found["ratio"] / symmetric - 1) < 0.005
    # A trailing pair without its partner is left out; a block whose side read no time at all (a coarse timer)
    # too, whole, so the A-first and B-first pairs never pair wrongly; nothing measurable at all is an error.
    assert len(abba_block_logs([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])) == 1
    assert abba_block_logs([1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 2.0, 2.0]) == [math.log(2.0)]
    assert abba_block_logs([1.0], [3.0]) == [math.log(3.0)]
    with pytest.raises(ValueError):
        pair_ratio([(0.0, 0.0), (0.0, 0.0)])


def test_ratio_ci_recovers_a_planted_ratio() -> None:
    rng = random.Random(2)
    pairs = [(a, a * 1.03 * (1 + rng.gauss(0, 0.002))) for a in (1 + rng.gauss(0, 0.05) for _ in range(8))]
    est = ratio_ci(pairs)
    assert est.low < 1.03 < est.high and est.high - est.low < 0.01
    with pytest.raises(ValueError):
        ratio_ci(pairs[:1])


def test_verdicts_need_the_whole_interval_beyond_the_band() -> None:
    assert verdict_for(RatioEstimate(1.03, 1.02, 1.04, 6), 0.01) == "loss"
    assert verdict_for(RatioEstimate(0.95, 0.94, 0.96, 6), 0.01) == "win"
    assert verdict_for(RatioEstimate(1.03, 1.005, 1.05, 6), 0.01) == "noise"  # part of it inside the band
    assert verdict_for(RatioEstimate(0.998, 0.99, 1.006, 6), 0.01) == "noise"
    assert claim_holds("noise", "same") and claim_holds("win", "win") and not claim_holds("noise", "win")


def test_abba_order_is_counterbalanced() -> None:
    order = abba(4)
    assert order == [0, 1, 1, 0, 0, 1, 1, 0]
    assert order.count(0) == order.count(1) == 4


def test_one_disturbed_process_does_not_widen_the_interval_past_use() -> None:
    import math

    from kerntune.measure.stats import ratio_ci, robust_ratio_ci

    steady = [(1.0, 1.030), (1.0, 1.028), (1.0, 1.032), (1.0, 1.029), (1.0, 1.031)]
    disturbed = [*steady, (1.0, 1.60)]  # one process shared the device: its pair reads 1.6
    plain = ratio_ci(disturbed)
    robust, aside = robust_ratio_ci(disturbed)
    assert plain.low < 1.0  # the t interval over all six reaches below 1: "noise" for a real 3% loss
    assert aside == (1.0, 1.60) and robust.low > 1.02 and robust.n == 5  # set aside, said, and the loss stands
    even, none = robust_ratio_ci(steady)
    assert none is None and math.isclose(even.ratio, ratio_ci(steady).ratio)
    spread = [(1.0, 1.0), (1.0, 1.2), (1.0, 0.85), (1.0, 1.1), (1.0, 0.9)]  # a wide spread is not one disturbance
    assert robust_ratio_ci(spread)[1] is None
    assert robust_ratio_ci(disturbed[:3])[1] is None  # too few pairs to call one of them an outlier


def test_the_stopping_rules_interval_covers_the_median_of_skewed_samples_at_its_level() -> None:
    # The stopping check's interval is the order-statistics one (a bootstrap cost milliseconds of idle device
    # per check): over 400 draws of 200 log-normal samples (a timing distribution's long right tail) it must
    # hold the true median about 95% of the time, and be the bare interval when the blocks agree.
    from kerntune.measure.protocol import MeasureOptions, _interval
    from kerntune.model import median_ci as order_statistics_ci

    rng = random.Random(3)
    options = MeasureOptions(ci_target=1.0, min_samples=10)
    covered = 0
    for _ in range(400):
        samples = [math.exp(rng.gauss(0.0, 0.3)) for _ in range(200)]
        blocks = [1.0] * 10  # the blocks agree exactly: their half-width is zero and widens nothing
        interval = _interval(samples, blocks, 1.0, options, 1e9)
        assert interval is not None and interval == order_statistics_ci(sorted(samples))
        covered += interval[0] <= 1.0 <= interval[1]  # the log-normal's median is exp(0) = 1
    assert 0.92 <= covered / 400 <= 0.99, covered
