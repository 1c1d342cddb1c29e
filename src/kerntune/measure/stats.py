"""The statistics measurements and A/B verdicts rest on (SciPy), in one place.

- ``bootstrap_median_ci``: bootstrap confidence interval of a median (the lab's pair ratios). Timing samples
  are skewed (a tail of interrupted or clock-dipped launches), so a normal-theory interval around the mean would
  mislead. A measurement's stopping rule uses the order-statistics interval (``kerntune.model.median_ci``),
  which costs one sort where this costs milliseconds.
- ``abba_block_logs``: launches timed side by side (A B B A ...) as one log ratio per A B B A block, which
  carries each side once after the other side and once after itself.
- ``pair_ratio``: the ratio of launches timed side by side: exp of the median block log ratio, its bootstrap
  interval, each side's median.
- ``ratio_ci``: confidence interval of a B/A time ratio from paired per-process medians. Each pair is two
  neighbouring processes of an ABBA sequence, so slow drift of the machine (clocks, temperature, other
  tenants) cancels within a pair instead of landing on whichever side ran later.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
from scipy import stats

BOOTSTRAP_RESAMPLES = 1000
"""Enough for a pair ratio's interval: its ends move by well under 1% between reruns."""


def bootstrap_median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median (fixed seed: the same samples give the same interval)."""
    data = np.asarray(samples, dtype=np.float64)
    if data.size < 3 or float(data.min()) == float(data.max()):
        return float(data.min()), float(data.max())
    result = stats.bootstrap(
        (data,),
        np.median,
        confidence_level=confidence,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method="percentile",
        vectorized=True,
        axis=-1,
        random_state=np.random.default_rng(0),
    )
    low, high = result.confidence_interval
    return float(low), float(high)


def block_half_width(block_medians: Sequence[float], confidence: float = 0.95) -> float:
    """Half-width of a Student-t interval over block medians (the batch-means method): it widens when the
    blocks disagree, which correlated samples hide from a bootstrap over single samples."""
    if len(block_medians) < 2:
        return float("inf")
    data = np.asarray(block_medians, dtype=np.float64)
    sem = float(data.std(ddof=1)) / math.sqrt(data.size)
    return float(stats.t.ppf(0.5 + confidence / 2, data.size - 1)) * sem


@dataclass(frozen=True)
class RatioEstimate:
    """B/A time ratio (below 1: B is faster) with its confidence interval, from ``n`` pairs."""

    ratio: float
    low: float
    high: float
    n: int

    @property
    def extent(self) -> float:
        """The farthest the interval reaches from 1 (the A/A noise band is built from this)."""
        return max(abs(self.low - 1.0), abs(self.high - 1.0))


def ratio_ci(pairs: Sequence[tuple[float, float]], confidence: float = 0.95) -> RatioEstimate:
    """Geometric-mean ratio of paired (a, b) times with a Student-t interval on the log ratios.

    Logs make the ratio symmetric (B twice as slow and twice as fast are equally far from 1); with the few
    pairs an A/B can afford, a t interval is honest where a bootstrap of five values is not.
    """
    if len(pairs) < 2:
        raise ValueError("a ratio interval needs at least two pairs")
    logs = np.array([math.log(b / a) for a, b in pairs])
    mean = float(logs.mean())
    sem = float(logs.std(ddof=1)) / math.sqrt(len(logs))
    half = float(stats.t.ppf(0.5 + confidence / 2, len(logs) - 1)) * sem
    return RatioEstimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))


DISTURBED_Z = 5.0
"""How far (in robust standard deviations: 1.4826 × the median absolute deviation) a pair's log ratio must sit
from the median of all pairs to be set aside as disturbed."""


def robust_ratio_ci(
    pairs: Sequence[tuple[float, float]], confidence: float = 0.95
) -> tuple[RatioEstimate, tuple[float, float] | None]:
    """``ratio_ci`` robust to one disturbed pair: with four pairs or more, the one pair whose log ratio lies
    farthest from the median is set aside when it is more than ``DISTURBED_Z`` robust standard deviations away (a
    process that shared the device with another, or started under other clocks), and the interval is taken over
    the rest. Returns the estimate and the pair set aside (None when none was). At most one: two far pairs are
    not a disturbance but the spread, which the interval must show."""
    if len(pairs) >= 4:
        logs = np.array([math.log(b / a) for a, b in pairs])
        centre = float(np.median(logs))
        spread = 1.4826 * float(np.median(np.abs(logs - centre)))
        far = int(np.argmax(np.abs(logs - centre)))
        if spread > 0 and abs(logs[far] - centre) > DISTURBED_Z * spread:
            kept = [p for i, p in enumerate(pairs) if i != far]
            return ratio_ci(kept, confidence), pairs[far]
    return ratio_ci(pairs, confidence), None


def abba_block_logs(a_samples: Sequence[float], b_samples: Sequence[float]) -> list[float]:
    """One log ratio per A B B A block of samples taken side by side: pair ``2j`` ran A then B, pair ``2j + 1`` B
    then A, and block ``j``'s value is log((b_2j + b_2j+1) / (a_2j + a_2j+1)). A trailing unmatched pair is left
    out (taken alone when it is the only pair), and so is a block with a side of no measurable time (a timer too
    coarse reads zero): drop whole blocks, never single samples, or the A-first and B-first pairs pair wrongly.

    Hazard guarded: a launch that follows the other side's launch can run slower than one that follows its own,
    cache flush or not. On the H200 a fused split-K GEMM took 19.30 µs after torch.matmul and 18.03 µs after
    itself, with a 256 MiB flush before every launch (2026-12-04; the cause, instruction caches or address
    translation the flush does not clear, not isolated). In A B B A order the even pairs put B after A and the odd
    pairs A after B, so per-pair log ratios fall into two groups and their median lands anywhere between them: on
    those calls 1.1824, where each block's ratio read 1.1982 and an independent check 1.19–1.20. A block carries
    each side once in each position, so the carryover cancels within it."""
    if not a_samples or len(a_samples) != len(b_samples):
        raise ValueError(f"paired samples need equal, non-zero counts (got {len(a_samples)} and {len(b_samples)})")
    if len(a_samples) == 1:
        sums = [(a_samples[0], b_samples[0])]
    else:
        sums = [
            (a_samples[i] + a_samples[i + 1], b_samples[i] + b_samples[i + 1]) for i in range(0, len(a_samples) - 1, 2)
        ]
    return [math.log(b / a) for a, b in sums if a > 0 and b > 0]


def paired_log_ratio(a_samples: Sequence[float], b_samples: Sequence[float]) -> float:
    """The median block log ratio (``abba_block_logs``) over samples taken side by side (A B B A ...): each block
    shares its moment, so a transient (an interrupt, a clock dip) moves one block, not a side's whole median.
    Raises ValueError when no block has a measurable time on both sides."""
    logs = abba_block_logs(a_samples, b_samples)
    if not logs:
        raise ValueError("no A B B A block has a measurable time on both sides")
    return float(np.median(logs))


class PairRatio(TypedDict):
    """A ratio b/a of launches timed side by side, as ``pair_ratio`` gives it."""

    ratio: float
    ci: list[float]
    pairs: int
    blocks: int
    original_ms: float
    variant_ms: float


def pair_ratio(pairs: Sequence[tuple[float, float]]) -> PairRatio:
    """exp of the median block log ratio b/a over pairs in A B B A order (``abba_block_logs``), its 95%
    bootstrap interval, the ``pairs`` and ``blocks`` it rests on, and each side's median (the lab's names:
    ``original_ms`` for a, ``variant_ms`` for b)."""
    logs = abba_block_logs([a for a, _ in pairs], [b for _, b in pairs]) if pairs else []
    if not logs:
        raise ValueError("a pair ratio needs at least one pair with a measurable time on both sides")
    low, high = bootstrap_median_ci(logs)
    return {
        "ratio": math.exp(statistics.median(logs)),
        "ci": [math.exp(low), math.exp(high)],
        "pairs": len(pairs),
        "blocks": len(logs),
        "original_ms": statistics.median(a for a, _ in pairs),
        "variant_ms": statistics.median(b for _, b in pairs),
    }
