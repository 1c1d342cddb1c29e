"""The contract every backend meets, and the failure classification they share.

A backend places inputs on its device, compiles a config for a shape, launches it, times launches with
device events (with a cache flush between samples, outside the timed region), reads outputs back for the
gate, and describes its Target. Backends are imported only inside worker processes.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kerntune.devices.telemetry import Telemetry, Unavailable
from kerntune.errors import CandidateFailed
from kerntune.model import FailureKind, Kernel, Meta, Target, TorchCallable

Launch = Callable[[dict[str, object]], object]


@dataclass
class Compiled:
    """A config compiled for one shape: ``launch(device_args)`` enqueues it (asynchronously)."""

    launch: Launch
    compile_s: float
    binary_hash: str | None = None
    resources: dict[str, Any] = field(default_factory=dict)
    signature: str | None = None
    """Identity of the work a launch does: every kernel binary it runs with its grid. Two configs with equal
    signatures do the same work, so the tuner times one of them (None: unknown, time each)."""


@dataclass(frozen=True)
class Comparison:
    """An output against its reference: what the gate judges (computed where the data lives)."""

    shape: tuple[int, ...]
    ref_shape: tuple[int, ...]
    size: int
    non_finite: int
    relative_error: float
    """‖out − ref‖₂ / ‖ref‖₂ in float64 (the absolute norm where the reference is all zeros)."""


def compare_arrays(out: np.ndarray, ref: np.ndarray) -> Comparison:
    """Comparison of two host arrays, in float64."""
    if out.shape != ref.shape:
        return Comparison(tuple(out.shape), tuple(ref.shape), int(out.size), 0, float("nan"))
    non_finite = int(np.count_nonzero(~np.isfinite(out)))
    diff = float(np.linalg.norm((out.astype(np.float64) - ref.astype(np.float64)).ravel()))
    norm = float(np.linalg.norm(ref.astype(np.float64).ravel()))
    return Comparison(tuple(out.shape), tuple(ref.shape), int(out.size), non_finite, diff / norm if norm > 0 else diff)


def digest(data: bytes | str) -> str:
    """Short content hash used for binaries and sources (md5: identity, not security)."""
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.md5(raw).hexdigest()


def place_arrays(host_args: Mapping[str, object], array: Callable[[np.ndarray], object]) -> dict[str, object]:
    """Host arguments placed for a kernel that takes 32-bit scalars: each array through ``array`` (contiguous
    first), Python ints and bools as int32, floats as float32, numpy scalars and anything else as given."""
    placed: dict[str, object] = {}
    for name, value in host_args.items():
        if isinstance(value, np.ndarray):
            placed[name] = array(np.ascontiguousarray(value))
        elif isinstance(value, bool | int):
            placed[name] = np.int32(value)
        elif isinstance(value, float):
            placed[name] = np.float32(value)
        else:
            placed[name] = value
    return placed


class Backend(ABC):
    """One kernel language on one device."""

    name: str = ""
    timer: str = ""
    """Name of the clock the samples come from (``cuda-events``, ``opencl-profiling``)."""
    graphs: bool = False
    """True when ``graph`` can capture launches (CUDA/HIP graphs)."""
    reference_on_device: bool = False
    """True when the spec's reference receives placed (device) arguments rather than the host inputs."""

    @abstractmethod
    def target(self) -> Target: ...

    @abstractmethod
    def place(self, host_args: Mapping[str, object]) -> dict[str, object]:
        """Fresh device copies of the inputs (never shared between candidates: a bad kernel may corrupt them)."""

    @abstractmethod
    def poison(self, args: Mapping[str, object], outputs: Sequence[str]) -> None:
        """Fill outputs with NaN (floats) or a sentinel (integers) so unwritten elements are caught."""

    @abstractmethod
    def to_host(self, value: object) -> np.ndarray:
        """A device output (or a reference value) as a float64 NumPy array."""

    def hold_reference(self, value: object) -> object:
        """Keep a reference output for later comparisons (host float64 by default)."""
        return self.to_host(value)

    def compare(self, out: object, reference: object) -> Comparison:
        """Compare a device output with a held reference (on the host by default)."""
        return compare_arrays(self.to_host(out), np.asarray(reference))

    def copy_placed(self, placed: Mapping[str, object]) -> dict[str, object] | None:
        """A fresh device-side copy of placed inputs, or None where only ``place`` from the host can make one.
        Cheaper than a host transfer; each candidate still gets its own copy (a bad kernel may corrupt them)."""
        return None

    def limits(self) -> dict[str, int]:
        """The device's per-block and per-multiprocessor limits (shared memory, registers, threads) that a
        compiled kernel must fit; empty where unknown. Names: see ``kerntune.isa.occupancy``."""
        return {}

    @abstractmethod
    def compile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        """Compile ``kernel`` with ``tunables`` (config and derived values) for the shape in ``meta`` (which
        holds shape fields and tunables together); ``args`` are placed example arguments (some compilers
        specialize on argument types and alignment). Raise CandidateFailed on failure."""

    def precompile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        """Compile without running anything on the device (a compile-ahead worker calls this while another
        process times kernels, which a launch would disturb); the result's binary lands in the compiler's
        on-disk cache, so the timing worker's own compile is a cache hit. Default: ``compile``."""
        return self.compile(kernel, tunables, meta, args)

    def compile_callable(self, kernel: TorchCallable, meta: Meta, args: dict[str, object]) -> Compiled:
        """A baseline implementation (e.g. a library op) as a launchable."""
        raise CandidateFailed(FailureKind.ERROR.value, f"backend {self.name} cannot run {kernel.name}")

    @abstractmethod
    def synchronize(self) -> None: ...

    @abstractmethod
    def time_launches(self, launches: Sequence[Callable[[], object]], flush: bool) -> list[float]:
        """Run each launch in order, timed alone with device events: one sample per launch, in milliseconds.

        With ``flush``, the last-level cache is overwritten before every launch, outside the timed region,
        so each sample starts cold (the default regime): a warm cache makes repeated launches look faster
        than the first touch of data in a real program. A sample is device time only: the device must not
        wait on the host's enqueueing inside it (see backends.stream_hold).
        """

    def flush_cache(self) -> None:
        """Overwrite the last-level cache now, enqueued on the timed queue: what ``time_launches`` does before
        each launch with ``flush`` (the second timer's cold regime, ``measure.second_timer``)."""
        raise CandidateFailed(FailureKind.ERROR.value, f"the {self.name} backend has no cache flush")

    def time_calls(self, call: Callable[[], object], count: int, fed: bool = True) -> list[float]:
        """Device time of each of ``count`` calls of ``call`` (which may enqueue many launches), in ms. With
        ``fed`` the device is kept busy while the host enqueues (device time only); without, the device
        waits on the host as in a live eager program (what the launch-overhead figure measures)."""
        raise CandidateFailed(FailureKind.ERROR.value, f"the {self.name} backend cannot time batched calls")

    def graph(self, launches: Sequence[Callable[[], object]]) -> Callable[[], object]:
        """Capture ``launches`` into one replayable graph (CUDA/HIP graphs); return its replay."""
        raise CandidateFailed(
            FailureKind.ERROR.value, f"the {self.name} backend has no graph mode: measure with --mode eager"
        )

    def telemetry(self) -> Telemetry:
        """Where this device's clocks, power and throttle reasons are read (``Unavailable`` if nowhere)."""
        return Unavailable(f"no telemetry for the {self.name} backend on this device")

    @property
    @abstractmethod
    def flush_bytes(self) -> int:
        """Bytes written to evict the cache between samples (at least twice its size)."""

    @property
    def uncovered_chunks(self) -> int:
        """Timed chunks so far whose samples may include the device waiting on the host (0 where the timer
        is immune: OpenCL profiling events time the kernel itself)."""
        return 0

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release device resources."""


def classify(exc: BaseException) -> FailureKind:
    """Map a compiler or runtime exception to a failure kind, from its type name and message.

    Messages are matched rather than types so that every backend's errors (pyopencl, Triton, torch, CUDA,
    HIP) land in one vocabulary without importing those packages here.
    """
    kind = type(exc).__name__
    text = f"{kind}: {exc}".lower()
    if "outofmemory" in kind.lower() or any(
        s in text for s in ("out of memory", "mem_object_allocation", "can't allocate memory")
    ):
        return FailureKind.OOM
    if kind in ("CompilationError", "OutOfResources", "CompileTimeAssertionFailure") or any(
        s in text for s in ("build_program_failure", "compilation error", "out of resources", "passmanager")
    ):
        return FailureKind.COMPILE
    if any(
        s in text
        for s in (
            "illegal memory access",
            "illegal address",
            "misaligned address",
            "unspecified launch failure",
            "device-side assert",
            "cuda error",
            "hip error",
            "hiperror",
        )
    ):
        return FailureKind.CRASH
    if any(s in text for s in ("invalid_work_group_size", "invalid_work_item_size", "invalid_global_work_size")):
        return FailureKind.LAUNCH
    return FailureKind.ERROR


CONTEXT_FATAL = (FailureKind.CRASH, FailureKind.OOM, FailureKind.HANG)
"""After these the device context may be unusable: the worker is restarted before the next candidate."""


def fail(exc: BaseException, stage: str) -> CandidateFailed:
    """A CandidateFailed for ``exc`` raised during ``stage`` (compile, launch, ...), message trimmed."""
    kind = classify(exc)
    if kind is FailureKind.ERROR and stage == "compile":
        kind = FailureKind.COMPILE
    message = " ".join(str(exc).split())
    if len(message) > 600:
        message = message[:300] + " … " + message[-280:]
    return CandidateFailed(kind.value, f"{stage}: {type(exc).__name__}: {message}")
