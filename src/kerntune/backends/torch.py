"""torch backend: any callable on device tensors (``torch.matmul``, a library op, a fused function) as a
candidate or a baseline, and the device plumbing the Triton backend builds on.

On a CUDA or ROCm GPU, samples come from CUDA events (HIP events under ROCm) around each launch, with an L2
flush before each launch outside the events. Without a GPU the callables still run (for correctness) but
no timing is claimed: CPU wall-clock numbers are not comparable with device events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from kerntune.backends.base import Backend, Comparison, Compiled, fail
from kerntune.devices.telemetry import Telemetry, Unavailable, open_telemetry
from kerntune.errors import BackendUnavailable, CandidateFailed
from kerntune.model import FailureKind, Kernel, Meta, Target, TorchCallable
from kerntune.runtime.keys import arch_name
from kerntune.settings import Settings

try:
    import torch
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailable("this backend needs torch: pip install 'kerntune[triton]'") from exc

from kerntune.backends.stream_hold import StreamHold  # after the check above: it needs torch


def _nvml_driver() -> str | None:
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:
        return None


class TorchBackend(Backend):
    name = "torch"
    reference_on_device = True

    def __init__(self, device: str = "") -> None:
        selector = device.strip().lower()
        if selector in ("", "auto", "gpu", "cuda", "rocm", "hip"):
            selector = "cuda" if torch.cuda.is_available() else "cpu"
        if selector.startswith(("cuda", "rocm", "hip")):
            if not torch.cuda.is_available():
                raise BackendUnavailable(f"device {device!r} asked for, but torch sees no CUDA or ROCm GPU here")
            index = int(selector.split(":")[1]) if ":" in selector else 0
            self.device = torch.device("cuda", index)
            torch.cuda.set_device(self.device)
        elif selector == "cpu":
            self.device = torch.device("cpu")
        else:
            raise BackendUnavailable(f"unknown torch device {device!r}: use cuda, cuda:N or cpu")
        self.on_gpu = self.device.type == "cuda"
        self.graphs = self.on_gpu
        self.timer = "cuda-events" if self.on_gpu else "none"
        if self.on_gpu:
            props = torch.cuda.get_device_properties(self.device)
            l2 = int(getattr(props, "L2_cache_size", 0) or 0)
            self._flush_bytes = Settings.from_env().flush_bytes(l2, 64 << 20)
            self._flush = torch.empty(self._flush_bytes, dtype=torch.uint8, device=self.device)
            self._hold = StreamHold(self.device)
        else:
            self._flush_bytes = 0

    # ----------------------------------------------------------------------------------------- target
    def target(self) -> Target:
        versions = [("torch", str(torch.__version__))]
        if not self.on_gpu:
            return Target(self.name, "cpu", "cpu", "host CPU (torch)", 1, tuple(versions), claims_timing=False)
        props = torch.cuda.get_device_properties(self.device)
        hip = getattr(torch.version, "hip", None)
        arch = arch_name(props, bool(hip))
        if hip:
            vendor = "amd"
            versions.append(("hip", str(hip)))
        else:
            vendor = "nvidia"
            versions.append(("cuda", str(torch.version.cuda)))
            driver = _nvml_driver()
            if driver:
                versions.append(("driver", driver))
        versions.extend(self._extra_versions())
        return Target(
            backend=self.name,
            vendor=vendor,
            arch=arch,
            device_name=str(props.name),
            compute_units=int(props.multi_processor_count),
            versions=tuple(sorted(versions)),
            claims_timing=True,
        )

    def _extra_versions(self) -> list[tuple[str, str]]:
        return []

    # -------------------------------------------------------------------------------------- tensors
    def place(self, host_args: Mapping[str, object]) -> dict[str, object]:
        placed: dict[str, object] = {}
        for name, value in host_args.items():
            if isinstance(value, np.ndarray):
                value = torch.from_numpy(np.ascontiguousarray(value))
            if isinstance(value, torch.Tensor):
                # A fresh copy per candidate: an out-of-bounds write must not corrupt the next one's inputs.
                placed[name] = value.detach().to(self.device, copy=True)
            else:
                placed[name] = value
        return placed

    def poison(self, args: Mapping[str, object], outputs: Sequence[str]) -> None:
        for name in outputs:
            tensor = args[name]
            if not isinstance(tensor, torch.Tensor):
                raise CandidateFailed(FailureKind.ERROR.value, f"output {name!r} is not a tensor")
            if tensor.is_floating_point():
                tensor.fill_(float("nan"))
            else:
                tensor.fill_(torch.iinfo(tensor.dtype).max)
        self.synchronize()

    def to_host(self, value: object) -> np.ndarray:
        if isinstance(value, torch.Tensor):
            return value.detach().to(torch.float64).cpu().numpy()
        return np.asarray(value, dtype=np.float64)

    def copy_placed(self, placed: Mapping[str, object]) -> dict[str, object] | None:
        return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in placed.items()}

    def hold_reference(self, value: object) -> object:
        if not self.on_gpu:
            return self.to_host(value)
        # Kept on the device in float64: comparing there moves no output across PCIe and spares the host a
        # float64 norm over hundreds of MB per candidate (the gate's cost on large GEMMs).
        tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
        return tensor.detach().to(self.device, torch.float64)

    def compare(self, out: object, reference: object) -> Comparison:
        if not (isinstance(reference, torch.Tensor) and isinstance(out, torch.Tensor)):
            return super().compare(out, reference)
        shape, ref_shape = tuple(out.shape), tuple(reference.shape)
        if shape != ref_shape:
            return Comparison(shape, ref_shape, out.numel(), 0, float("nan"))
        values = out.detach().to(torch.float64)
        non_finite = int((~torch.isfinite(values)).sum().item())
        diff = float(torch.linalg.vector_norm(values - reference).item())
        norm = float(torch.linalg.vector_norm(reference).item())
        return Comparison(shape, ref_shape, out.numel(), non_finite, diff / norm if norm > 0 else diff)

    def limits(self) -> dict[str, int]:
        if not self.on_gpu:
            return {}
        props = torch.cuda.get_device_properties(self.device)
        fields = {
            "shared_bytes_per_block": "shared_memory_per_block_optin",
            "shared_bytes_per_sm": "shared_memory_per_multiprocessor",
            "registers_per_sm": "regs_per_multiprocessor",
            "threads_per_sm": "max_threads_per_multi_processor",
            "warp_size": "warp_size",
        }
        found = {
            name: int(getattr(props, attr))
            for name, attr in fields.items()
            if isinstance(getattr(props, attr, None), int)
        }
        found.setdefault("threads_per_block", 1024)  # every CUDA and HIP device since 2010
        if not getattr(torch.version, "hip", None):
            found.setdefault("shared_reserved_per_block", 1024)  # the driver's own share, sm_80 and newer
            found.setdefault("blocks_per_sm", 32)
        return found

    # ---------------------------------------------------------------------------------------- compile
    def compile(self, kernel: Kernel, tunables: Meta, meta: Meta, args: dict[str, object]) -> Compiled:
        if isinstance(kernel, TorchCallable):
            return self.compile_callable(kernel, meta, args)
        raise CandidateFailed(FailureKind.ERROR.value, f"the torch backend cannot run a {kernel.language} kernel")

    def compile_callable(self, kernel: TorchCallable, meta: Meta, args: dict[str, object]) -> Compiled:
        fn = kernel.fn
        return Compiled(launch=lambda args: fn(args, meta), compile_s=0.0, binary_hash=None)

    # ----------------------------------------------------------------------------------------- timing
    def synchronize(self) -> None:
        if self.on_gpu:
            torch.cuda.synchronize(self.device)

    def _events(self, count: int) -> list[torch.cuda.Event]:
        if not self.on_gpu:
            raise CandidateFailed(FailureKind.ERROR.value, "no device timer on the CPU: timing is not claimed")
        return [torch.cuda.Event(enable_timing=True) for _ in range(count)]  # type: ignore[no-untyped-call]

    def time_launches(self, launches: Sequence[Callable[[], object]], flush: bool) -> list[float]:
        starts, ends = self._events(len(launches)), self._events(len(launches))

        def enqueue(i: int) -> None:
            if flush:
                # Written on the same stream before the start event: the flush finishes before timing
                # begins and is never part of a sample.
                self._flush.zero_()
            starts[i].record()
            launches[i]()
            ends[i].record()

        self._hold.timed(len(launches), enqueue)  # the device never waits on the host inside a sample
        return [float(s.elapsed_time(e)) for s, e in zip(starts, ends, strict=True)]

    def flush_cache(self) -> None:
        if self._flush_bytes:
            self._flush.zero_()

    def time_calls(self, call: Callable[[], object], count: int, fed: bool = True) -> list[float]:
        starts, ends = self._events(count), self._events(count)

        def enqueue(i: int) -> None:
            starts[i].record()
            call()
            ends[i].record()

        if fed:
            self._hold.timed(count, enqueue)
        else:
            for i in range(count):
                enqueue(i)
            torch.cuda.synchronize(self.device)
        return [float(s.elapsed_time(e)) for s, e in zip(starts, ends, strict=True)]

    @property
    def uncovered_chunks(self) -> int:
        """Chunks whose enqueueing outlasted the stream hold three times (see backends.stream_hold)."""
        return self._hold.uncovered if self.on_gpu else 0

    def graph(self, launches: Sequence[Callable[[], object]]) -> Callable[[], object]:
        if not self.on_gpu:
            return super().graph(launches)
        graph = torch.cuda.CUDAGraph()
        # Capture runs on a side stream (torch.cuda.graph does this); kernels must already be compiled,
        # which the gate's runs guarantee. Nothing executes during capture.
        with torch.cuda.graph(graph):
            for launch in launches:
                launch()
        torch.cuda.synchronize(self.device)
        return graph.replay

    def telemetry(self) -> Telemetry:
        if not self.on_gpu:
            return Unavailable("no telemetry for the host CPU")
        props = torch.cuda.get_device_properties(self.device)
        uuid = getattr(props, "uuid", None)
        vendor = "amd" if getattr(torch.version, "hip", None) else "nvidia"
        return open_telemetry(vendor, str(uuid) if uuid is not None else None, self.device.index or 0)

    @property
    def flush_bytes(self) -> int:
        return self._flush_bytes


def run_first(launch: Callable[[], object], sync: Callable[[], None], stage: str) -> tuple[object, float]:
    """Run ``launch`` once and synchronize, turning any failure into a CandidateFailed for ``stage``."""
    start = time.perf_counter()
    try:
        result = launch()
        sync()
    except CandidateFailed:
        raise
    except Exception as exc:
        raise fail(exc, stage) from exc
    return result, time.perf_counter() - start
