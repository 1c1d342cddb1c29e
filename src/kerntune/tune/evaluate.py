"""What a worker process does for one candidate: compile, gate on correctness, then measure.

These functions run inside ``kerntune.exec`` workers (named by dotted path, so ``exec`` never imports
``tune``). They take and return plain data only. A failure of the candidate raises CandidateFailed, which
the worker returns as a result; anything that kills the process (a segfault, a hang) is caught by the pool.
"""

from __future__ import annotations

import math
import operator
import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, Protocol, TypedDict, TypeVar, runtime_checkable

from kerntune.backends import Backend, load_backend
from kerntune.backends.base import Compiled, Launch, fail
from kerntune.devices.telemetry import Reading, Telemetry
from kerntune.errors import CandidateFailed, SpecError
from kerntune.measure.protocol import MeasureOptions, MeasureOptionsRecord, measure, measure_interleaved
from kerntune.model import (
    Config,
    FailureKind,
    Kernel,
    Measurement,
    Problem,
    Scalar,
    Shape,
    Target,
    TorchCallable,
    Verdict,
)
from kerntune.model.json_types import JSONObject
from kerntune.settings import Settings
from kerntune.tune import gate
from kerntune.tune.spec import load_spec, with_kernel_source


def _gpu_present() -> bool:
    # Device nodes, not `import torch`: cheap, and it must be decided before the spec imports Triton.
    return any(Path(p).exists() for p in ("/dev/nvidiactl", "/dev/kfd"))


Args = dict[str, object]
"""A kernel's launch arguments by name: device arrays (opaque here) and scalars."""
InputKey = tuple[str, str, int]
"""(shape key, dtype, seed): one drawn input set."""


@dataclass
class SpecWorker:
    """What ``setup`` loads into a worker's state (under ``"spec"``): the spec's problem, its backend and device,
    and the current shape's inputs, references and placed copies."""

    problem: Problem
    backend: Backend
    target: Target
    telemetry: Telemetry
    variants: dict[str, Kernel]
    inputs: dict[InputKey, Args] = field(default_factory=dict)
    references: dict[InputKey, list[object]] = field(default_factory=dict)
    placed: dict[InputKey, Args] = field(default_factory=dict)
    compile_args: dict[tuple[str, str], Args] = field(default_factory=dict)


@runtime_checkable
class FloatArray(Protocol):
    """A drawn float input (a torch tensor or NumPy array): what the checks on fresh inputs read."""

    @property
    def shape(self) -> Sequence[int]: ...

    def any(self) -> object: ...


def worker(state: Mapping[str, object]) -> SpecWorker:
    """The spec ``setup`` loaded into this worker's state."""
    spec = state.get("spec")
    if not isinstance(spec, SpecWorker):
        raise RuntimeError("this worker has no spec loaded: call kerntune.tune.evaluate:setup first")
    return spec


class SetupPayload(TypedDict, total=False):
    spec_path: str
    device: str
    kernel_source: str
    variants: list[str]


class SetupReply(TypedDict):
    target: JSONObject
    digest: str
    pid: int
    telemetry: Reading
    graphs: bool
    backend: str


class CandidatePayload(TypedDict, total=False):
    """One candidate to compile (and gate, and time): ``shape``, ``dtype`` and ``seeds`` are always given."""

    shape: dict[str, Scalar]
    dtype: str
    seeds: list[int]
    config: dict[str, Scalar]
    kernel_source: str
    baseline_kernel: str | None
    gate: bool
    measure: MeasureOptionsRecord


class VerdictRecord(TypedDict):
    outcome: Literal["pass", "fail", "win", "loss", "noise", "blocked"]
    metric: str
    value: float | None
    threshold: float | None
    reason: str
    details: dict[str, object]


class FailureRecord(TypedDict):
    kind: str
    reason: str


class CandidateReply(TypedDict, total=False):
    """What ``evaluate`` returns for one candidate (``kerntune.tune.run`` reads it)."""

    compile_s: float
    binary_hash: str | None
    resources: dict[str, object]
    gate_s: float
    verdict: VerdictRecord
    failure: FailureRecord
    timing: str
    measure_s: float
    samples_ms: list[float]
    ci_ms: list[float]
    conditions: dict[str, object]


class PrecompileReply(TypedDict):
    compile_s: float
    binary_hash: str | None
    resources: dict[str, object]
    signature: str | None
    limits: dict[str, int]


class PairPayload(TypedDict):
    a: CandidatePayload
    b: CandidatePayload
    measure: MeasureOptionsRecord


class PairFailed(TypedDict):
    failed: str
    result: CandidateReply


def setup(state: dict[str, object], payload: SetupPayload) -> SetupReply:
    """Load the spec and the backend in this worker; return the Target as a dict."""
    device = str(payload.get("device") or "")
    if device.lower() in ("cpu", "interpreter") or not _gpu_present():
        # Triton reads this when a kernel is decorated, so it must be set before the spec is imported.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    loaded = load_spec(payload["spec_path"])
    if payload.get("kernel_source"):
        loaded = with_kernel_source(loaded, payload["kernel_source"])
    problem = loaded.problem
    # Other kernel sources of the same spec, loaded beside its own kernel: an in-process A/B of two sources
    # times both in this one process (``evaluate_pair`` payloads name theirs), so no process-to-process state
    # enters the comparison.
    variants = {str(path): with_kernel_source(loaded, path).problem.kernel for path in payload.get("variants", ())}
    backend = load_backend(problem.language, "" if device in ("interpreter",) else device)
    state.clear()
    target = backend.target()
    telemetry = backend.telemetry()
    state["spec"] = SpecWorker(problem, backend, target, telemetry, variants)
    return {
        "target": target.as_dict(),
        "digest": loaded.digest,
        "pid": os.getpid(),
        "telemetry": telemetry.read(),
        "graphs": backend.graphs,
        "backend": backend.name,
    }


_Key = TypeVar("_Key", bound=tuple[object, ...])
_Value = TypeVar("_Value")


def _keep_shape(cache: dict[_Key, _Value], key: _Key) -> None:
    """Drop a cache's entries of other shapes (or dtypes): a run walks its shapes and each one's inputs and float64
    references can take a GB of device memory; a shape met again is drawn again (milliseconds on a GPU)."""
    for old in [k for k in cache if k[:2] != key[:2]]:
        del cache[old]


def _inputs(spec: SpecWorker, shape: Shape, dtype: str, seed: int) -> Args:
    key = (shape.key, dtype, seed)
    cache = spec.inputs
    if key not in cache:
        _keep_shape(cache, key)
        problem = spec.problem
        made = _spec_call("make_inputs", problem.make_inputs, shape.as_dict(), dtype, seed)
        if not isinstance(made, dict):
            raise SpecError(
                f"the spec's make_inputs returned a {type(made).__name__}, not a dict of argument name to value: "
                "return {'a': ..., 'c': ...} naming every kernel argument; fix the spec"
            )
        args: Args = made
        missing = [o for o in problem.outputs if o not in args]
        if missing:
            raise SpecError(f"make_inputs returned no output argument {missing}; return every output too")
        _refuse_degenerate_inputs(args, problem.outputs, seed)
        for (other_shape, other_dtype, other_seed), other in cache.items():
            if (other_shape, other_dtype) == (shape.key, dtype) and other_seed != seed and _same_inputs(args, other):
                raise SpecError(
                    f"make_inputs returned the same inputs for seeds {other_seed} and {seed}: "
                    "draw them from the seed so each gate check sees fresh data"
                )
        cache[key] = args
    return cache[key]


def _float_inputs(args: Args, outputs: Sequence[str]) -> list[tuple[str, FloatArray]]:
    found: list[tuple[str, FloatArray]] = []
    for name, value in args.items():
        if name in outputs:
            continue
        is_float = getattr(value, "is_floating_point", None)  # torch tensors
        numpy_float = getattr(getattr(value, "dtype", None), "kind", "") == "f" and getattr(value, "size", 0) > 1
        if ((callable(is_float) and is_float()) or numpy_float) and isinstance(value, FloatArray):
            found.append((name, value))
    return found


def _refuse_degenerate_inputs(args: Args, outputs: Sequence[str], seed: int) -> None:
    """All-zero inputs hide unwritten outputs and wrong indexing, and run faster than real data."""
    for name, value in _float_inputs(args, outputs):
        if not bool(value.any()):
            raise SpecError(f"make_inputs gave an all-zero input {name!r} for seed {seed}: draw random data instead")


def _same_inputs(a: Args, b: Args) -> bool:
    first_a, first_b = _float_inputs(a, ()), _float_inputs(b, ())
    if not first_a or not first_b:
        return False
    x, y = first_a[0][1], first_b[0][1]
    return bool(x.shape == y.shape and bool(operator.eq(x, y).all()))  # elementwise: a tensor's == is an array


def _reference(spec: SpecWorker, shape: Shape, dtype: str, seed: int) -> list[object]:
    key = (shape.key, dtype, seed)
    cache = spec.references
    if key not in cache:
        _keep_shape(cache, key)
        problem, backend = spec.problem, spec.backend
        host = _inputs(spec, shape, dtype, seed)
        # The reference sees the inputs as the kernel does: device tensors for torch-based backends (so a
        # float64 reference runs on the GPU), host arrays where the device copies are opaque buffers.
        args = backend.place(host) if backend.reference_on_device else dict(host)
        expected = _spec_call("reference", problem.reference, args, shape.as_dict())
        values = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        if len(values) != len(problem.outputs):
            raise CandidateFailed(
                FailureKind.ERROR.value,
                f"the reference returned {len(values)} arrays for outputs {list(problem.outputs)}",
            )
        cache[key] = [backend.hold_reference(v) for v in values]
    return cache[key]


def placed_inputs(spec: SpecWorker, shape: Shape, dtype: str, seed: int) -> Args:
    """A fresh device copy of the inputs for one candidate. A pristine placed set is kept per seed for the
    current shape, and copied on the device where the backend can (a host transfer of hundreds of MB per
    candidate would be the tuner's cost, not the kernel's); a set from an earlier shape is dropped."""
    backend = spec.backend
    cache = spec.placed
    key = (shape.key, dtype, seed)
    if key not in cache:
        _keep_shape(cache, key)
        cache[key] = backend.place(_inputs(spec, shape, dtype, seed))
    copied = backend.copy_placed(cache[key])
    return copied if copied is not None else backend.place(_inputs(spec, shape, dtype, seed))


def precompile(state: dict[str, object], payload: CandidatePayload) -> PrecompileReply:
    """Compile one candidate without running it (a compile-ahead worker): its time, binary, resources and
    signature. The compiler's on-disk cache carries the binary to the timing worker."""
    spec = worker(state)
    problem, backend = spec.problem, spec.backend
    shape = Shape.of(payload["shape"])
    dtype = str(payload["dtype"])
    config = Config.of(payload["config"])
    meta, tunables = problem.space.meta(config, shape), problem.space.tunables(config, shape)
    cache = spec.compile_args
    key = (shape.key, dtype)
    if key not in cache:
        cache.clear()
        cache[key] = backend.place(_inputs(spec, shape, dtype, int(payload["seeds"][0])))
    compiled = backend.precompile(problem.kernel, tunables, meta, dict(cache[key]))
    return {
        "compile_s": compiled.compile_s,
        "binary_hash": compiled.binary_hash,
        "resources": compiled.resources,
        "signature": compiled.signature,
        "limits": backend.limits(),
    }


def _spec_call(what: str, fn: Callable[..., _Value], *args: object) -> _Value:
    """Call the spec's own code; its failure is the spec's fault, not a candidate's: the run stops."""
    try:
        return fn(*args)
    except Exception as exc:
        where = ""
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            where = f" ({Path(frame.filename).name}:{frame.lineno})"
            break
        raise SpecError(f"the spec's {what} raised {type(exc).__name__}: {exc}{where}; fix the spec") from exc


def evaluate(state: dict[str, object], payload: CandidatePayload) -> CandidateReply:
    """Compile, gate and measure one candidate. Returns a plain dict (see ``kerntune.tune.run``)."""
    spec = worker(state)
    result, launches, set_bytes = _prepare(spec, payload)
    if launches is None:
        return result
    backend = spec.backend
    options = MeasureOptions(**payload["measure"])
    start = time.perf_counter()
    try:
        measurement = measure(backend, launches, options, spec.telemetry, set_bytes * len(launches))
    except CandidateFailed:
        raise
    except Exception as exc:
        raise fail(exc, "measure") from exc
    result["measure_s"] = time.perf_counter() - start
    result.update(_measurement_dict(measurement))
    return result


def evaluate_pair(state: dict[str, object], payload: PairPayload) -> dict[str, CandidateReply] | PairFailed:
    """Two candidates of one spec — two configs, or two kernel sources (a payload's ``kernel_source`` names one
    of the ``variants`` set up) — each compiled and gated, then timed interleaved (A B B A ...) so that every A
    sample has a B sample beside it in time: drift of the machine cancels within each pair.
    ``payload``: ``{"a": evaluate payload, "b": evaluate payload, "measure": options}``. A side that
    fails returns ``{"failed": "A" or "B", "result": its result}``."""
    spec = worker(state)
    backend = spec.backend
    prepared: list[tuple[CandidateReply, partial[object]]] = []
    for name, side in (("a", payload["a"]), ("b", payload["b"])):
        result, launches, _ = _prepare(spec, side)
        if launches is None:
            return {"failed": name.upper(), "result": result}
        prepared.append((result, launches[0]))
    options = MeasureOptions(**payload["measure"])
    shape, dtype = Shape.of(payload["a"]["shape"]), str(payload["a"]["dtype"])
    sets = _placements(spec, shape, dtype, int(payload["a"]["seeds"][0]))
    # One launch of each side per placement, both sides on the same operands (as a program swaps one kernel for
    # another); a side's own gated copy is used where there is one placement.
    sides = [[partial(launch.func, args) for args in sets] if len(sets) > 1 else [launch] for _, launch in prepared]
    try:
        pair = measure_interleaved(backend, sides[0], sides[1], options, spec.telemetry)
    except CandidateFailed:
        raise
    except Exception as exc:
        raise fail(exc, "measure") from exc
    out: dict[str, CandidateReply] = {}
    for (result, _), name, m in zip(prepared, ("a", "b"), pair, strict=True):
        out[name] = {**result, **_measurement_dict(m)}
    return out


def _measurement_dict(m: Measurement) -> CandidateReply:
    return {"samples_ms": list(m.samples_ms), "ci_ms": list(m.ci_ms), "conditions": m.conditions.as_dict()}


def kernel_for(problem: Problem, baseline_name: str | None) -> Kernel | TorchCallable:
    """The spec's kernel, or the kernel of the baseline named."""
    if baseline_name:
        return next(b.kernel for b in problem.baselines if b.name == baseline_name and b.kernel is not None)
    return problem.kernel


def compile_for(spec: SpecWorker, shape: Shape, config: Config, kernel: Kernel | TorchCallable, args: Args) -> Compiled:
    """Compile ``kernel`` at ``config`` (none for a baseline callable) for ``shape`` on placed ``args``."""
    problem, backend = spec.problem, spec.backend
    meta = problem.space.meta(config, shape) if config.items else dict(shape.as_dict())
    tunables = problem.space.tunables(config, shape) if config.items else {}
    if isinstance(kernel, TorchCallable):
        return backend.compile_callable(kernel, meta, args)
    return backend.compile(kernel, tunables, meta, args)


def _prepare(spec: SpecWorker, payload: CandidatePayload) -> tuple[CandidateReply, list[partial[object]] | None, int]:
    """Compile and gate one candidate; return its result so far and its timed launches (None: do not time)."""
    problem, backend = spec.problem, spec.backend
    shape = Shape.of(payload["shape"])
    dtype = str(payload["dtype"])
    seeds = [int(s) for s in payload["seeds"]]
    threshold = gate.threshold_for(dtype, problem.tolerance)
    config = Config.of(payload.get("config") or {})
    result: CandidateReply = {}
    first_args = placed_inputs(spec, shape, dtype, seeds[0])
    kernel = (
        spec.variants[payload["kernel_source"]]
        if payload.get("kernel_source")
        else kernel_for(problem, payload.get("baseline_kernel"))
    )
    compiled = compile_for(spec, shape, config, kernel, first_args)
    result["compile_s"], result["binary_hash"] = compiled.compile_s, compiled.binary_hash
    result["resources"] = compiled.resources

    verdicts = []
    gate_start = time.perf_counter()
    timing_args: Args | None = None
    if not payload.get("gate", True):
        # Asked to time only (a later round of an in-process A/B whose first round passed the gate).
        seeds = []
        timing_args = first_args
    for seed in seeds:
        args = first_args if seed == seeds[0] else placed_inputs(spec, shape, dtype, seed)
        refs = _reference(spec, shape, dtype, seed)
        backend.poison(args, problem.outputs)
        returned = _run_once(backend, compiled.launch, args)
        if isinstance(kernel, TorchCallable) and kernel.returns_outputs:
            produced = list(returned) if isinstance(returned, (tuple, list)) else [returned]
        else:
            produced = [args[name] for name in problem.outputs]
        if len(produced) != len(refs):
            raise CandidateFailed(FailureKind.ERROR.value, f"produced {len(produced)} outputs, expected {len(refs)}")
        compared = [
            (name, backend.compare(value, ref))
            for name, value, ref in zip(problem.outputs, produced, refs, strict=True)
        ]
        verdicts.append(gate.judge(compared, dtype, threshold, seed))
        timing_args = args
    result["gate_s"] = time.perf_counter() - gate_start
    if verdicts:
        verdict = gate.combine(verdicts)
        result["verdict"] = _verdict_dict(verdict)
        if not verdict.passed:
            result["failure"] = {"kind": FailureKind.WRONG.value, "reason": verdict.reason}
            return result, None, 0
    if not spec.target.claims_timing or timing_args is None:
        result["timing"] = f"not claimed: {backend.timer}"
        return result, None, 0
    sets = [timing_args]
    if payload["measure"].get("regime") == "rotating":
        host = _inputs(spec, shape, dtype, int(payload["seeds"][0]))
        sets += [backend.place(host) for _ in range(_rotating_copies(backend, host) - 1)]
    return result, [partial(compiled.launch, args) for args in sets], _set_bytes(sets[0])


def _verdict_dict(verdict: Verdict) -> VerdictRecord:
    return {
        "outcome": verdict.outcome,
        "metric": verdict.metric,
        "value": verdict.value,
        "threshold": verdict.threshold,
        "reason": verdict.reason,
        "details": dict(verdict.details),
    }


def _set_bytes(args: Args) -> int:
    total = 0
    for value in args.values():
        nbytes = getattr(value, "nbytes", None)
        if nbytes is None and hasattr(value, "shape") and hasattr(value, "dtype"):  # an OpenCL DeviceArray
            nbytes = math.prod(value.shape) * value.dtype.itemsize
        total += int(nbytes or 0)
    return total


def _placements(spec: SpecWorker, shape: Shape, dtype: str, seed: int) -> list[Args]:
    """Fresh device copies of the inputs, all alive together (so each lies elsewhere in device memory), that an
    interleaved A/B takes in turn: KERNTUNE_PLACEMENTS of them, fewer where they would hold more than
    KERNTUNE_PLACEMENTS_MB together; none (an empty list: time each side's own copy) where one is asked."""
    settings = Settings.from_env()
    host = _inputs(spec, shape, dtype, seed)
    count = min(settings.placements, max(1, (settings.placements_mb << 20) // max(1, _set_bytes(host))))
    if count < 2:
        return []
    return [spec.backend.place(host) for _ in range(count)]


def _rotating_copies(backend: Backend, host: Args) -> int:
    """Enough input copies that cycling through them overflows the cache (twice its size), at most 64."""
    size = max(1, _set_bytes(host))
    return max(2, min(64, math.ceil(backend.flush_bytes / size) + 1))


def _run_once(backend: Backend, launch: Launch, args: Args) -> object:
    try:
        returned = launch(args)
        backend.synchronize()
        return returned
    except CandidateFailed:
        raise
    except Exception as exc:
        raise fail(exc, "launch") from exc
