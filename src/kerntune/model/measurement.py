"""``Measurement`` (raw samples under ``Conditions``), ``Verdict`` and ``FailureKind``."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal


@dataclass(frozen=True)
class Conditions:
    """How a Measurement was taken. Results compare only under equal conditions (``key``)."""

    timer: str
    regime: Literal["cold", "warm", "rotating"] = "cold"
    """cold: cache flushed before every sample; warm: back-to-back on the same inputs; rotating: cycling
    through input copies whose total size is ``cache_bytes``."""
    mode: Literal["eager", "graph"] = "eager"
    """eager: one device-event pair per launch; graph: CUDA-graph replays of many launches, per-launch mean."""
    fresh_process: bool = False
    warmup_ms: float = 0.0
    flush_bytes: int = 0
    cache_bytes: int = 0
    """Bytes between two touches of the same data: the flush size (cold) or the rotated inputs (rotating)."""
    launch_overhead_ms: float | None = None
    """Graph mode only: eager per-launch time minus graph per-launch time on the same launches."""
    telemetry: Mapping[str, Any] | None = None
    """Clocks, power, temperature and throttle reasons seen; None where not available (the CPU)."""
    wall_ms: Mapping[str, float] | None = None
    """Where the measurement's wall time went (host clock, ms): ``warm_up`` and ``sampling`` (the two phases, the
    interleaved second timer apart), ``bookkeeping`` (inside them: telemetry reads and stopping checks, the
    device idle meanwhile) and ``reads`` (telemetry readings taken). Not part of ``key()``: a diagnosis of what a
    measurement cost, not a condition it was taken under; None in records from before it existed."""

    @property
    def throttled(self) -> bool:
        return bool(self.telemetry and self.telemetry.get("throttled"))

    @property
    def other_tenant(self) -> bool:
        """Another process held a compute context on the device while this was measured."""
        return bool(self.telemetry and self.telemetry.get("other_tenant"))

    def key(self) -> tuple[str, str, str, bool, bool]:
        """What must be equal for two results to be compared: a delta across different keys is not a delta."""
        return (self.timer, self.regime, self.mode, self.fresh_process, self.throttled)

    def key_text(self) -> str:
        """``key()`` as text (the ``# conditions:`` line of a floor file)."""
        timer, regime, mode, fresh, throttled = self.key()
        return f"timer={timer} regime={regime} mode={mode} fresh_process={fresh} throttled={throttled}"

    def as_dict(self) -> dict[str, object]:
        return {
            "timer": self.timer,
            "regime": self.regime,
            "mode": self.mode,
            "fresh_process": self.fresh_process,
            "warmup_ms": self.warmup_ms,
            "flush_bytes": self.flush_bytes,
            "cache_bytes": self.cache_bytes,
            "launch_overhead_ms": self.launch_overhead_ms,
            "telemetry": dict(self.telemetry) if self.telemetry is not None else None,
            "wall_ms": dict(self.wall_ms) if self.wall_ms is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Conditions:
        overhead = data.get("launch_overhead_ms")
        return cls(
            timer=str(data["timer"]),
            regime=data.get("regime", "cold"),
            mode=data.get("mode", "eager"),
            fresh_process=bool(data.get("fresh_process", False)),
            warmup_ms=float(data.get("warmup_ms", 0.0)),
            flush_bytes=int(data.get("flush_bytes", 0)),
            cache_bytes=int(data.get("cache_bytes", data.get("flush_bytes", 0))),
            launch_overhead_ms=float(overhead) if overhead is not None else None,
            telemetry=data.get("telemetry"),
            wall_ms=data.get("wall_ms"),
        )


def _quantile(ordered: Sequence[float], q: float) -> float:
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median_ci(ordered: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics (binomial ranks).

    Timing samples are skewed (a long tail of interrupted launches), so a normal-theory interval around the
    mean would mislead; ranks make no assumption about the distribution.
    """
    n = len(ordered)
    if n < 6:
        return ordered[0], ordered[-1]
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half))
    return ordered[lo], ordered[hi]


@dataclass(frozen=True)
class Measurement:
    """Every raw sample (milliseconds of device time per launch) and its summary, under Conditions."""

    samples_ms: tuple[float, ...]
    conditions: Conditions
    ci: tuple[float, float] | None = None
    """The median's 95% confidence interval as computed when measured (bootstrap); None: order statistics."""

    def __post_init__(self) -> None:
        if not self.samples_ms:
            raise ValueError("a Measurement needs at least one sample")

    @property
    def ordered(self) -> list[float]:
        return sorted(self.samples_ms)

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def min_ms(self) -> float:
        return min(self.samples_ms)

    @property
    def max_ms(self) -> float:
        return max(self.samples_ms)

    def quantile(self, q: float) -> float:
        return _quantile(self.ordered, q)

    @property
    def ci_ms(self) -> tuple[float, float]:
        return self.ci if self.ci is not None else median_ci(self.ordered)

    @property
    def spread(self) -> float:
        """(q90 − q10) / median: the relative spread shown next to a median."""
        return (self.quantile(0.9) - self.quantile(0.1)) / self.median_ms

    def summary(self) -> dict[str, float]:
        lo, hi = self.ci_ms
        return {
            "median_ms": self.median_ms,
            "q10_ms": self.quantile(0.1),
            "q90_ms": self.quantile(0.9),
            "min_ms": self.min_ms,
            "max_ms": self.max_ms,
            "mean_ms": statistics.fmean(self.samples_ms),
            "ci_low_ms": lo,
            "ci_high_ms": hi,
            "n": float(self.n),
        }


class FailureKind(str, Enum):
    """Why a candidate did not produce a trusted result."""

    COMPILE = "compile"
    CRASH = "crash"
    HANG = "hang"
    OOM = "oom"
    WRONG = "wrong-result"
    LAUNCH = "launch"
    UNSUPPORTED = "unsupported"
    """The target lacks an ISA feature the config needs (wgmma off sm_90a, MFMA off CDNA): refused before
    compiling, as a capability check, never as a performance pick."""
    ERROR = "error"


@dataclass(frozen=True)
class Verdict:
    """The outcome of a gate (pass/fail) or an A/B (win/loss/noise), with its number and a reason."""

    kind: Literal["gate", "ab"]
    outcome: Literal["pass", "fail", "win", "loss", "noise", "blocked"]
    metric: str
    value: float | None
    threshold: float | None
    reason: str
    details: Mapping[str, object] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.outcome in ("pass", "win")
