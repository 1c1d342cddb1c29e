"""Every KERNTUNE_* environment variable, in one place, each with its documentation line.

``Settings.from_env()`` reads them once; code takes a Settings object instead of reading the environment.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from kerntune.errors import UsageError


@dataclass(frozen=True)
class Settings:
    home: Path = Path(".kerntune")
    """KERNTUNE_HOME: folder holding the SQLite store (runs, candidates, samples, verdicts)."""
    candidate_timeout_s: float = 60.0
    """KERNTUNE_CANDIDATE_TIMEOUT_S: a candidate running longer is killed and recorded as a hang."""
    setup_timeout_s: float = 600.0
    """KERNTUNE_SETUP_TIMEOUT_S: limit for a worker to load the spec and make inputs and references."""
    warmup_ms: float = 250.0
    """KERNTUNE_WARMUP_MS: warm-up by time before sampling (clocks ramp, caches and JIT settle)."""
    min_samples: int = 10
    """KERNTUNE_MIN_SAMPLES: fewest timed samples per measurement."""
    max_samples: int = 5000
    """KERNTUNE_MAX_SAMPLES: most timed samples per measurement."""
    min_window_ms: float = 0.0
    """KERNTUNE_MIN_WINDOW_MS: sample for at least this long (averages a power cap's clock swings)."""
    sample_budget_ms: float = 1500.0
    """KERNTUNE_SAMPLE_BUDGET_MS: wall-clock budget for sampling one candidate (warm-up excluded)."""
    ci_target: float = 0.005
    """KERNTUNE_CI_TARGET: stop sampling once the median's 95% CI half-width is within this fraction."""
    regime: str = "cold"
    """KERNTUNE_REGIME: cache regime timed: cold (flushed before each sample), warm, or rotating inputs."""
    mode: str = "eager"
    """KERNTUNE_MODE: eager (events per launch) or graph (CUDA-graph replays; launch overhead apart)."""
    ab_processes: int = 6
    """KERNTUNE_AB_PROCESSES: fresh processes per side of an A/B (ABBA order); at least 2."""
    ab_max_processes: int = 18
    """KERNTUNE_AB_MAX_PROCESSES: an A/B whose interval crosses an edge of the noise band (undecided: neither
    wholly beyond it nor wholly inside it) takes ``ab_processes`` more values per side, again while undecided,
    up to this many per side; then the verdict is given on all of them (noise if still undecided)."""
    ab_min_band: float = 0.01
    """KERNTUNE_AB_MIN_BAND: the smallest noise band an A/B uses, whatever its A/A run showed (a fraction).
    Two copies of one kernel in different buffers or processes differ systematically by up to ~1% (placement,
    clocks): a smaller difference is not a claim kerntune makes by default."""
    plateau_rounds: int = 3
    """KERNTUNE_PLATEAU_ROUNDS: stop a non-exhaustive search after this many rounds under 2% gain (0: never)."""
    plateau_round: int = 0
    """KERNTUNE_PLATEAU_ROUND: evaluations per round (0: max(8, 5% of the valid configs))."""
    gate_seeds: int = 2
    """KERNTUNE_GATE_SEEDS: how many fresh random input sets each candidate is checked on (at least 2)."""
    finalists: int = 3
    """KERNTUNE_FINALISTS: how many of the fastest searched configs are confirmed (0: no confirmation)."""
    confirm_rounds: int = 3
    """KERNTUNE_CONFIRM_ROUNDS: fresh processes in which finalists and baselines are re-timed, interleaved."""
    confirm_band: float = 0.03
    """KERNTUNE_CONFIRM_BAND: after a confirmation round, a finalist whose interleaved ratio so far is more than
    this fraction behind the best finalist's is not re-timed in later rounds (a clear loser; 0: re-time all)."""
    second_timer: int = 1
    """KERNTUNE_SECOND_TIMER: 1 times every interleaved comparison (confirmation rounds, ``ab``'s in-process
    pairs) again by the device's independent timer — the profiler's kernel durations beside CUDA events, the host
    clock beside OpenCL's profiling events — and flags a ratio the two disagree on by more than 1%; 0 skips it."""
    vulkan_memory: str = "device-local"
    """KERNTUNE_VULKAN_MEMORY: where the Vulkan backend places buffers: device-local (filled and read through a
    staging buffer) or host-visible (host-coherent, mapped); part of the Target, so the two are never mixed."""
    flush_mb: int = 0
    """KERNTUNE_FLUSH_MB: the cache flush written before each cold-regime launch, in MiB (0: twice the device's
    last-level cache, at least the backend's floor; Triton's do_bench writes 256 MiB)."""
    placements: int = 16
    """KERNTUNE_PLACEMENTS: fresh copies of the inputs, alive together, that an interleaved A/B (confirmation,
    ``kerntune ab``) takes in turn, both sides on the same copy; 1 times each side on its own gated copy. On the
    H200 one pair of kernels' ratio moved 2.7–4.9% between placements of its operands, each known to ±0.55%, and
    a split-K winner's ratio had a 1.3% standard deviation over placements: the mean of 4 then has a standard
    error of 0.65%, of 16 0.33%. More copies cost memory (KERNTUNE_PLACEMENTS_MB bounds them), not more pairs."""
    placements_mb: int = 2048
    """KERNTUNE_PLACEMENTS_MB: the most those copies hold together, in MiB (fewer copies above it)."""
    capture_max_mb: float = 4096.0
    """KERNTUNE_CAPTURE_MAX_MB: the most tensor data one lab capture saves (inputs, and as much again for outputs);
    a launch or call holding more is refused before anything is written."""
    compile_workers: int = -1
    """KERNTUNE_COMPILE_WORKERS: processes compiling candidates ahead of the timing worker (-1: all cores but
    three on a GPU host, none on a CPU device, whose cores the compilers would take from the kernel timed)."""
    min_occupancy: float = 0.0
    """KERNTUNE_MIN_OCCUPANCY: prune compiled configs whose resident warps per multiprocessor, as a fraction of
    the most it holds, are under this (0: prune only configs that cannot launch)."""
    sol_stop: float = 0.9
    """KERNTUNE_SOL_STOP: stop a shape's search once a config reaches this fraction of the roofline bound
    (needs the spec's cost model and a ``kerntune calibrate`` of the device; 0: never)."""
    max_configs: int = 500_000
    """KERNTUNE_MAX_CONFIGS: the most valid configs a space may enumerate at one shape (about 0.5 GB of configs).
    The product of the value lists is counted first; past this limit a sample of it, then the walk itself, refuse a
    larger space with a one-line error before memory fills: narrow the space, or raise this."""
    lock_timeout_s: float = 600.0
    """KERNTUNE_LOCK_TIMEOUT_S: how long to wait for a device another kerntune is calibrating (0: refuse)."""
    log_dispatch: int = 0
    """KERNTUNE_LOG_DISPATCH: 1 writes the runtime's first decision for each key to stderr."""
    record_untuned: str = ""
    """KERNTUNE_RECORD_UNTUNED: a file the runtime appends each missed key to (JSON lines): a shape corpus."""
    verify_out: str = ""
    """KERNTUNE_VERIFY_OUT: a folder where each process's dispatchers write their decisions and call counts at
    exit (set by ``kerntune verify``)."""
    first_call_check: int = 0
    """KERNTUNE_FIRST_CALL_CHECK: 1 checks each served key's first call (``kerntune run``, ``serve``) against the
    library's own output on the same inputs, to the spec's gate threshold (relative L2 error); a key that fails
    runs the library's kernel from then on, counted as failed and warned. It synchronises the device once per key.
    In production mode an admitted entry is not checked (its gate and verify already passed)."""
    dispatch: str = "on"
    """KERNTUNE_DISPATCH: off makes every Dispatcher run its default config. kerntune's own worker processes
    run with it off, so a table being tuned or trained never measures itself."""
    device: str = ""
    """KERNTUNE_DEVICE: device selector (e.g. ``cuda:0``, ``pocl``, an OpenCL device name fragment)."""
    binary_cache: str = ""
    """KERNTUNE_BINARY_CACHE: folder of compiled CUDA C++ and HIP binaries, keyed by source, macros, arch and
    compiler release (default: ~/.cache/kerntune/binaries)."""
    native_gate: str = "on"
    """KERNTUNE_NATIVE_GATE: on decides each served operator's call in C++ (built on first use with torch's C++
    compiler); off keeps the Python served kernel."""
    native_cache: str = ""
    """KERNTUNE_NATIVE_CACHE: folder of the built native gate, per source and torch version (default:
    ~/.cache/kerntune/native)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = env.get(f"KERNTUNE_{f.name.upper()}")
            if raw is None or raw == "":
                continue
            default = getattr(cls, f.name)
            try:
                value = type(default)(raw)
            except ValueError as exc:
                raise UsageError(
                    f"KERNTUNE_{f.name.upper()}={raw!r} is not a valid {type(default).__name__}; fix or unset it"
                ) from exc
            if isinstance(value, float) and not math.isfinite(value):  # NaN and inf would reach the store's JSON
                raise UsageError(f"KERNTUNE_{f.name.upper()}={raw!r} is not a finite number; fix or unset it")
            values[f.name] = value
        settings = cls(**values)  # type: ignore[arg-type]
        if settings.ab_processes < 2:
            raise UsageError("KERNTUNE_AB_PROCESSES must be at least 2: a ratio interval needs two pairs")
        for name in ("min_occupancy", "sol_stop"):
            if not 0.0 <= getattr(settings, name) <= 1.0:
                raise UsageError(f"KERNTUNE_{name.upper()} is a fraction in [0, 1], e.g. 0.25")
        if settings.dispatch not in ("on", "off"):
            raise UsageError(f"KERNTUNE_DISPATCH={settings.dispatch!r}: on or off")
        if settings.native_gate not in ("on", "off"):
            raise UsageError(f"KERNTUNE_NATIVE_GATE={settings.native_gate!r}: on or off")
        if settings.gate_seeds < 2:
            raise UsageError("KERNTUNE_GATE_SEEDS must be at least 2: one seed can hide a wrong kernel")
        if settings.placements < 1 or settings.placements_mb < 0:
            raise UsageError(
                "KERNTUNE_PLACEMENTS is a count of at least 1 (1: no placements taken in turn) and "
                "KERNTUNE_PLACEMENTS_MB a size in MiB"
            )
        if settings.max_configs < 1:
            raise UsageError("KERNTUNE_MAX_CONFIGS is a count of at least 1, e.g. 500000")
        if settings.flush_mb < 0:
            raise UsageError("KERNTUNE_FLUSH_MB is a size in MiB (0: twice the last-level cache)")
        return settings

    def flush_bytes(self, last_level_cache: int, floor: int) -> int:
        """Bytes a cold-regime flush writes: KERNTUNE_FLUSH_MB when set, else twice the cache and at least
        ``floor`` (a partial flush leaves part of the working set warm)."""
        return self.flush_mb << 20 if self.flush_mb else max(2 * last_level_cache, floor)
