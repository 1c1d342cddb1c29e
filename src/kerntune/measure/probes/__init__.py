"""Calibration probes, one module per device family: ``opencl`` and ``gpu`` (CUDA and ROCm through torch and
Triton); ``fastest`` is how a probe picks its own config."""

from __future__ import annotations

from collections.abc import Callable, Mapping

SCREEN_MS = 200.0
"""Measurement budget of each config of a probe while screening."""
FULL_MS = 1000.0
"""Measurement budget of a probe's chosen config (and of a probe with one config)."""


def fastest(timers: Mapping[str, Callable[[float], float]]) -> tuple[float, str]:
    """A probe at its best config: ``timers`` maps each config's name to a function timing it under a budget
    (ms) and giving its median (ms); each is screened at ``SCREEN_MS``, the fastest timed again at ``FULL_MS``.
    Returns that median and the config's name. Hazard guarded: a ceiling one untuned launch sets lets a tuned
    kernel read as more than 100% of it."""
    screened = {name: timer(SCREEN_MS) for name, timer in timers.items()}
    best = min(screened, key=screened.__getitem__)
    return timers[best](FULL_MS), best
