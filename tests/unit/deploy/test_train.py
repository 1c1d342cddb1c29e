"""Table training on a synthetic sweep (no device): segments, least total regret, exact entries beyond the noise
band, held-out scoring through the live dispatcher, and shapes left out when their sweep was cut short."""

from __future__ import annotations

import pytest

from kerntune.deploy.train import ShapeTimes, TrainOptions, complete, dimensions, fit_table, least_regret
from kerntune.errors import UsageError

SMALL, LARGE = "BLOCK_M=16", "BLOCK_M=128"
CONFIGS = {SMALL: {"BLOCK_M": 16}, LARGE: {"BLOCK_M": 128}}


def _sweep() -> list[ShapeTimes]:
    """Small tiles win below M = 128 by 30%, large tiles win from there by 30%."""
    shapes = []
    for m in (16, 32, 64, 128, 256, 512):
        for n in (1024, 4096, 16384):
            small, large = (1.0, 1.3) if m < 128 else (1.3, 1.0)
            shapes.append(ShapeTimes({"M": m, "N": n, "K": 4096}, {SMALL: small * n, LARGE: large * n}))
    return shapes


def test_rules_follow_the_row_count_and_held_out_shapes_get_the_right_tile() -> None:
    fitted = fit_table(
        _sweep(), CONFIGS, {"op": "mm"}, {"schema": 1}, TrainOptions(holdout_every=3, by=("M", "N*K:2", "N/K"))
    )
    report, table = fitted["report"], fitted["table"]
    assert table["training"]["by"] == ["M:1", "N*K:2", "N/K:1"]
    assert (report["training_shapes"], report["held_out_shapes"]) == (12, 6)
    assert report["exact_entries"] == 0 and report["training_geomean_regret"] == 0.0
    held = report["held_out"]
    assert held["coverage"] == 1.0 and held["geomean_regret"] == 0.0 and held["unscored"] == 0
    assert table["rules"][-1]["when"] == {"op": "mm"}  # the op-wide rule comes last
    assert all(rule["when"]["op"] == "mm" for rule in table["rules"])


def test_an_exact_entry_only_where_the_winner_beats_its_rule_beyond_noise() -> None:
    shapes = _sweep()
    odd = next(s for s in shapes if s.shape == {"M": 256, "N": 4096, "K": 4096})
    odd.times[SMALL] = odd.times[LARGE] * 0.9  # this one shape prefers small tiles by 10%
    fitted = fit_table(shapes, CONFIGS, {"op": "mm"}, {"schema": 1}, TrainOptions(holdout_every=0, by=("M",)))
    (entry,) = fitted["table"]["entries"]
    assert entry["key"] == {"op": "mm", "M": 256, "N": 4096, "K": 4096} and entry["config"] == {"BLOCK_M": 16}
    assert entry["rule_regret"] == pytest.approx(1 / 0.9 - 1)
    fitted = fit_table(
        shapes, CONFIGS, {"op": "mm"}, {"schema": 1}, TrainOptions(holdout_every=0, by=("M",), noise=0.15)
    )
    assert fitted["table"]["entries"] == []  # within a 15% band the rule is kept


def test_matmul_shapes_are_segmented_by_output_size_by_default() -> None:
    # M*N sets how many output tiles share the SMs: M=64 × N=16384 and M=256 × N=4096 fall in one bucket
    assert dimensions(_sweep(), ()) == [("M*N", 1.0)]
    assert dimensions([ShapeTimes({"N": 64, "K": 64}, {})], ()) == [("N/K", 1.0), ("N*K", 2.0)]


def test_least_regret_and_cut_short_shapes() -> None:
    shapes = _sweep()[:3]
    assert least_regret(shapes) == SMALL
    cut = ShapeTimes({"M": 16, "N": 64, "K": 64}, {SMALL: 1.0})
    wide = ShapeTimes({"M": 16, "N": 64, "K": 128}, {SMALL: 1.0, LARGE: 2.0, "BLOCK_M=32": 1.5})
    assert complete([cut, wide]) == [wide]
    with pytest.raises(UsageError, match="no positive 'Q'"):
        dimensions(shapes, ("Q",))
    with pytest.raises(UsageError, match="number of octaves"):
        dimensions(shapes, ("M:wide",))
