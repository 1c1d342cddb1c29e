"""The nouns of kerntune: plain data, no I/O, no heavy imports.

Problem (what is tuned) → Space (where to look) → Config (one point) → Candidate (a Config compiled for a
Target and a shape) → Measurement (raw samples under recorded Conditions) and Verdict (gate outcome) → Run
(one tuning session in the store).
"""

from __future__ import annotations

import inspect
import itertools
import math
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

Scalar = int | float | str | bool
Meta = dict[str, Any]
"""Shape fields, config values and derived values merged in one dict (what a grid function sees)."""


def _scalar_text(value: Scalar) -> str:
    return repr(value) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class _Point:
    """An ordered, immutable name → scalar mapping with a stable text form (used as a store key)."""

    items: tuple[tuple[str, Scalar], ...]

    @classmethod
    def of(cls, values: Mapping[str, Scalar]) -> _Point:
        return cls(tuple((str(k), v) for k, v in values.items()))

    def as_dict(self) -> dict[str, Scalar]:
        return dict(self.items)

    def __getitem__(self, name: str) -> Scalar:
        for key, value in self.items:
            if key == name:
                return value
        raise KeyError(name)

    def get(self, name: str, default: Scalar | None = None) -> Scalar | None:
        return self.as_dict().get(name, default)

    def names(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.items)

    @property
    def key(self) -> str:
        """Stable text form, e.g. ``BLOCK_M=128,BLOCK_N=64``: equal points give equal keys."""
        return ",".join(f"{k}={_scalar_text(v)}" for k, v in self.items)

    def __str__(self) -> str:
        return self.key


class Config(_Point):
    """One point of a Space: parameter name → value."""

    @classmethod
    def of(cls, values: Mapping[str, Scalar]) -> Config:
        return cls(tuple((str(k), v) for k, v in values.items()))


class Shape(_Point):
    """One problem size: field name → value (e.g. M, N, K)."""

    @classmethod
    def of(cls, values: Mapping[str, Scalar]) -> Shape:
        return cls(tuple((str(k), v) for k, v in values.items()))


@dataclass(frozen=True)
class Target:
    """Where a candidate runs. Every field can make a tuned result wrong elsewhere, so all are recorded."""

    backend: str
    vendor: str
    arch: str
    device_name: str
    compute_units: int
    versions: tuple[tuple[str, str], ...] = ()
    claims_timing: bool = True
    """False where the backend can check correctness but cannot time honestly (Triton's interpreter)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "vendor": self.vendor,
            "arch": self.arch,
            "device_name": self.device_name,
            "compute_units": self.compute_units,
            "versions": dict(self.versions),
            "claims_timing": self.claims_timing,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Target:
        return cls(
            backend=str(data["backend"]),
            vendor=str(data["vendor"]),
            arch=str(data["arch"]),
            device_name=str(data["device_name"]),
            compute_units=int(data["compute_units"]),
            versions=tuple(sorted((str(k), str(v)) for k, v in dict(data.get("versions", {})).items())),
            claims_timing=bool(data.get("claims_timing", True)),
        )

    @property
    def label(self) -> str:
        return f"{self.device_name} ({self.arch}, {self.compute_units} CU, {self.backend})"


# --------------------------------------------------------------------------------------------- space


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 3
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 3
    return len(positional)


@dataclass(frozen=True)
class Constraint:
    """A predicate over (config, shape, target). ``fn`` may take 1, 2 or 3 of those, in that order."""

    fn: Callable[..., bool]
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or getattr(self.fn, "__name__", "constraint")

    def holds(self, meta: Meta, shape: Shape, target: Target | None) -> bool:
        args: tuple[Any, ...] = (meta, shape.as_dict(), target)
        return bool(self.fn(*args[: max(1, _arity(self.fn))]))


Derived = Callable[[Meta], Scalar]


@dataclass(frozen=True)
class Space:
    """Named parameters with value lists (a product), or explicit points; constraints; derived values.

    - ``params``: name → candidate values; the space is their Cartesian product.
    - ``points``: an explicit list of configs instead of a product (e.g. a list of ``triton.Config``).
    - ``constraints``: predicates over (config, shape, target); a config failing one is rejected with the
      constraint's name as the reason. A constraint sees derived values too.
    - ``derived``: name → fn(meta) computed from config and shape values (not part of the config's identity).
    - ``default``: the conservative config a user would run without tuning (first values when absent).
    """

    params: Mapping[str, Sequence[Scalar]] = field(default_factory=dict)
    constraints: Sequence[Constraint | Callable[..., bool]] = ()
    derived: Mapping[str, Derived] = field(default_factory=dict)
    default: Mapping[str, Scalar] | None = None
    points: Sequence[Mapping[str, Scalar]] | None = None

    def __post_init__(self) -> None:
        from kerntune.errors import SpecError

        if self.points is None and not self.params:
            raise SpecError("the space is empty: give Space(params={...}) at least one parameter with values")
        if self.points is not None and len(self.points) == 0:
            raise SpecError("the space is empty: Space(points=[...]) lists no config")
        for name, values in self.params.items():
            if isinstance(values, (str, bytes)) or len(list(values)) == 0:
                raise SpecError(f"parameter {name!r} has no values: give it a non-empty list")

    @property
    def size(self) -> int:
        if self.points is not None:
            return len(self.points)
        return math.prod(len(list(v)) for v in self.params.values())

    def all_configs(self) -> Iterator[Config]:
        """Every point, in a stable order (product order, or the listed points)."""
        if self.points is not None:
            for point in self.points:
                yield Config.of(point)
            return
        names = list(self.params)
        for values in itertools.product(*(list(self.params[n]) for n in names)):
            yield Config.of(dict(zip(names, values, strict=False)))

    def default_config(self) -> Config:
        if self.default is not None:
            return Config.of(self.default)
        return next(self.all_configs())

    def _constraints(self) -> list[Constraint]:
        return [c if isinstance(c, Constraint) else Constraint(c) for c in self.constraints]

    def meta(self, config: Config, shape: Shape) -> Meta:
        """Shape fields, then config values, then derived values: what kernels and grids see."""
        meta: Meta = {**shape.as_dict(), **config.as_dict()}
        for name, fn in self.derived.items():
            meta[name] = fn(meta)
        return meta

    def tunables(self, config: Config, shape: Shape) -> Meta:
        """Config values and derived values: what is compiled into a candidate (defines, constexprs)."""
        meta = self.meta(config, shape)
        return {k: meta[k] for k in (*config.names(), *self.derived)}

    def check(self, config: Config, shape: Shape, target: Target | None) -> str | None:
        """None when the config is valid for this shape and target, else the rejecting constraint's name."""
        meta = self.meta(config, shape)
        for constraint in self._constraints():
            if not constraint.holds(meta, shape, target):
                return constraint.label
        return None

    def valid_configs(self, shape: Shape, target: Target | None) -> tuple[list[Config], dict[str, int]]:
        """The configs that pass every constraint, and how many each constraint rejected."""
        valid: list[Config] = []
        rejected: dict[str, int] = {}
        for config in self.all_configs():
            reason = self.check(config, shape, target)
            if reason is None:
                valid.append(config)
            else:
                rejected[reason] = rejected.get(reason, 0) + 1
        return valid, rejected


# ------------------------------------------------------------------------------------------- problem


@dataclass(frozen=True)
class Cost:
    """Work of one launch: floating-point operations and the fewest bytes it must move."""

    flops: float = 0.0
    bytes: float = 0.0


@dataclass(frozen=True)
class OpenCLKernel:
    """An OpenCL C kernel. Config and derived values become ``-D NAME=VALUE``; ``grid(meta)`` returns
    ``(global_size, local_size)`` (local may be None). Arguments are passed in the input maker's order."""

    source: str
    name: str
    grid: Callable[[Meta], tuple[Sequence[int], Sequence[int] | None]]
    build_options: Sequence[str] = ()
    language: Literal["opencl"] = "opencl"


@dataclass(frozen=True)
class TritonKernel:
    """A ``triton.jit`` function. ``grid(meta)`` gives the launch grid; config values are passed as
    constexpr keyword arguments (``num_warps``, ``num_stages``, ``num_ctas``, ``maxnreg`` as launch options).
    ``launch(fn, args, meta)``, when given, replaces the default launch (multi-kernel schemes such as a
    split-K reduction) and may return the main compiled kernel for resource reporting."""

    fn: Any
    grid: Callable[[Meta], tuple[int, ...]]
    launch: Callable[[Any, dict[str, Any], Meta], Any] | None = None
    language: Literal["triton"] = "triton"


@dataclass(frozen=True)
class TorchCallable:
    """Any Python callable on device tensors, e.g. ``torch.matmul(a, b, out=c)``: ``fn(args, meta)``.

    With ``returns_outputs``, ``fn`` returns its outputs (one tensor, or a tuple in ``outputs`` order) instead
    of writing them into the output arguments, and the gate checks what it returned: for ops with no ``out=``,
    a copy into the output argument would add memory traffic the op does not do and slow the baseline.
    """

    fn: Callable[[dict[str, Any], Meta], Any]
    name: str = "torch"
    returns_outputs: bool = False
    language: Literal["torch"] = "torch"


Kernel = OpenCLKernel | TritonKernel | TorchCallable


@dataclass(frozen=True)
class Baseline:
    """What the winner is compared against, timed and gated side by side in the same run: a config of the
    problem's own space, or another implementation (e.g. ``torch.matmul``)."""

    name: str
    config: Mapping[str, Scalar] | None = None
    kernel: TorchCallable | None = None


InputMaker = Callable[[Mapping[str, Scalar], str, int], dict[str, Any]]
Reference = Callable[[dict[str, Any], Mapping[str, Scalar]], Any]


@dataclass(frozen=True)
class Problem:
    """What is tuned. See ``examples/*/spec.py``.

    - ``make_inputs(shape, dtype, seed)`` returns the launch arguments in kernel order (arrays and scalars);
      it must draw random, non-zero data from ``seed``.
    - ``outputs`` names the arguments the kernel writes; they are poisoned before each checked run.
    - ``reference(args, shape)`` returns the expected outputs (one array, or a tuple in ``outputs`` order)
      computed in higher precision from the same inputs.
    - ``cost(shape, dtype)`` gives flops and bytes for speed-of-light figures.
    """

    name: str
    kernel: Kernel
    space: Space
    shapes: Sequence[Mapping[str, Scalar]]
    make_inputs: InputMaker
    reference: Reference
    outputs: Sequence[str]
    dtypes: Sequence[str] = ("float32",)
    cost: Callable[[Mapping[str, Scalar], str], Cost] | None = None
    baselines: Sequence[Baseline] = ()
    tolerance: Mapping[str, float] = field(default_factory=dict)
    """Per-dtype relative-error threshold overrides (see ``pipeline.gate``)."""

    def __post_init__(self) -> None:
        from kerntune.errors import SpecError

        if not self.shapes:
            raise SpecError(f"problem {self.name!r} lists no shapes: give shapes=[{{...}}]")
        if not self.outputs:
            raise SpecError(f"problem {self.name!r} names no outputs: give outputs=('c',)")
        if not self.dtypes:
            raise SpecError(f"problem {self.name!r} lists no dtypes")

    @property
    def language(self) -> str:
        return self.kernel.language

    def shape_fields(self) -> tuple[str, ...]:
        return tuple(str(k) for k in self.shapes[0])

    def all_baselines(self) -> list[Baseline]:
        """The declared baselines, with the space's default config first when none names it."""
        declared = list(self.baselines)
        if not any(b.config is not None for b in declared):
            declared.insert(0, Baseline("default", config=self.space.default_config().as_dict()))
        return declared


# ------------------------------------------------------------------------------- measurement, verdict


@dataclass(frozen=True)
class Conditions:
    """How a Measurement was taken. Results compare only under equal conditions (``key``)."""

    timer: str
    regime: Literal["cold", "warm", "rotating"] = "cold"
    mode: Literal["eager", "graph"] = "eager"
    fresh_process: bool = False
    warmup_ms: float = 0.0
    flush_bytes: int = 0
    telemetry: Mapping[str, Any] | None = None
    """Clocks, power, temperature seen; None where not available (the CPU)."""

    def key(self) -> tuple[str, str, str, bool]:
        return (self.timer, self.regime, self.mode, self.fresh_process)

    def as_dict(self) -> dict[str, Any]:
        return {
            "timer": self.timer,
            "regime": self.regime,
            "mode": self.mode,
            "fresh_process": self.fresh_process,
            "warmup_ms": self.warmup_ms,
            "flush_bytes": self.flush_bytes,
            "telemetry": dict(self.telemetry) if self.telemetry is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Conditions:
        return cls(
            timer=str(data["timer"]),
            regime=data.get("regime", "cold"),
            mode=data.get("mode", "eager"),
            fresh_process=bool(data.get("fresh_process", False)),
            warmup_ms=float(data.get("warmup_ms", 0.0)),
            flush_bytes=int(data.get("flush_bytes", 0)),
            telemetry=data.get("telemetry"),
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
        return median_ci(self.ordered)

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
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.outcome in ("pass", "win")


CandidateStatus = Literal["pending", "ok", "failed"]
CandidateRole = Literal["search", "baseline"]


@dataclass(frozen=True)
class Candidate:
    """A config (or a baseline implementation) compiled for a Target and run on one shape."""

    shape: Shape
    config: Config
    role: CandidateRole = "search"
    label: str = ""
    status: CandidateStatus = "pending"
    failure: FailureKind | None = None
    reason: str = ""
    compile_s: float | None = None
    binary_hash: str | None = None
    resources: Mapping[str, Any] = field(default_factory=dict)
    measurement: Measurement | None = None
    verdict: Verdict | None = None
    id: int | None = None

    @property
    def name(self) -> str:
        return self.label or self.config.key


RunStatus = Literal["running", "done", "interrupted", "failed"]


@dataclass(frozen=True)
class Budget:
    """Search limits: evaluations (per shape) and seconds (whole run). None means unlimited."""

    evaluations: int | None = None
    seconds: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"evaluations": self.evaluations, "seconds": self.seconds}


@dataclass(frozen=True)
class Run:
    """One tuning session in the store. Resumable: its options are enough to redo the plan."""

    id: str
    problem: str
    spec_path: str
    spec_hash: str
    target: Target
    strategy: str
    budget: Budget
    shapes: tuple[Shape, ...]
    dtype: str
    seed: int
    status: RunStatus = "running"
    stop_reason: str = ""
    created: str = ""
    elapsed_s: float = 0.0
    options: Mapping[str, Any] = field(default_factory=dict)
