"""``kerntune calibrate``: what this device attains, measured — copy, triad and read-only stream bandwidth (each
stream at the best of a few configs of its own: ``probes.fastest``), the FMA rate of a register-only kernel, and
launch latency — cached per device for 7 days.

The probes run in a worker with kerntune's own measurement protocol (warm regime: each array is several times
the last-level cache, so every pass streams from memory anyway). Only one calibration runs per device at a
time: another waits on the device's lock up to ``KERNTUNE_LOCK_TIMEOUT_S`` seconds (0: refuse at once), since
two probes sharing a device would each measure half of it. Probes: ``probes/opencl.py`` for OpenCL devices
(PoCL's CPU device included), ``probes/gpu.py`` for CUDA and ROCm GPUs (Triton kernels for copy, triad, read
and FMA; the vendor library through torch for the matrix rates).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kerntune.errors import UsageError
from kerntune.measure.speed_of_light import memory_ceiling
from kerntune.model.roofline import CeilingsRecord
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.calibrations import latest_calibration, save_calibration

if TYPE_CHECKING:
    from kerntune.backends.base import Backend
    from kerntune.devices.telemetry import Telemetry

CALIBRATE_SETUP = "kerntune.measure.calibrate:setup_in_worker"
CALIBRATE = "kerntune.measure.calibrate:probe_in_worker"
MAX_AGE_S = 7 * 24 * 3600.0


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings of one device (rates per second; latency in milliseconds)."""

    device_key: str
    device: str
    copy_bytes_per_s: float
    triad_bytes_per_s: float
    fma_flops_per_s: float
    launch_latency_ms: float
    read_bytes_per_s: float = 0.0
    """A read-only stream (a sum): what a kernel that mostly reads can reach (a Vulkan reduction read the H200's
    HBM at 102% of triad). 0 where not measured: a calibration stored before the probe existed."""
    matrix_flops_per_s: dict[str, float] = field(default_factory=dict)
    """Per dtype, through the vendor library (none on a CPU OpenCL device)."""
    created: float = 0.0
    details: dict[str, object] = field(default_factory=dict)
    cached: bool = False

    def record(self) -> CeilingsRecord:
        """The calibration as the store keeps it (``cached`` says where this copy came from, so it is left out)."""
        return CeilingsRecord(
            device_key=self.device_key,
            device=self.device,
            copy_bytes_per_s=self.copy_bytes_per_s,
            triad_bytes_per_s=self.triad_bytes_per_s,
            fma_flops_per_s=self.fma_flops_per_s,
            launch_latency_ms=self.launch_latency_ms,
            read_bytes_per_s=self.read_bytes_per_s,
            matrix_flops_per_s=dict(self.matrix_flops_per_s),
            created=self.created,
            details=self.details,
        )

    @property
    def memory_bytes_per_s(self) -> float:
        """The bandwidth ceiling: the best of the probes (a percentage of copy alone could exceed 100%)."""
        return memory_ceiling(self.record())[0]

    @property
    def memory_probe(self) -> str:
        """Which probe set the bandwidth ceiling (copy, triad or read)."""
        return memory_ceiling(self.record())[1]

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where the roofline's memory slope meets the FMA ceiling."""
        return self.fma_flops_per_s / self.memory_bytes_per_s


DEVICE_VERSIONS = ("driver", "opencl", "cuda", "hip")
"""Versions that can move a device's ceilings; compiler and framework versions (Triton, torch) do not key it,
so a Triton spec and a torch spec on one GPU read the same calibration."""


def device_key(target: dict[str, Any]) -> str:
    """Vendor, device, architecture, compute units and driver/runtime versions: a different one measures anew."""
    versions = {k: v for k, v in dict(target.get("versions") or {}).items() if k in DEVICE_VERSIONS}
    fields = {k: target.get(k) for k in ("vendor", "device_name", "arch", "compute_units")}
    text = json.dumps({**fields, "versions": versions}, sort_keys=True)
    return hashlib.md5(text.encode()).hexdigest()[:16]


GPU_SELECTORS = ("cuda", "rocm", "hip", "gpu")


def _backend_for(device: str) -> str:
    """``cuda``/``cuda:N``/``rocm``/``hip``/``gpu``: the GPU (Triton probes); empty: the GPU if torch sees one,
    else OpenCL; anything else names an OpenCL device."""
    selector = device.strip().lower()
    if selector.startswith(GPU_SELECTORS):
        return "triton"
    if selector:
        return "opencl"
    import importlib.util

    if importlib.util.find_spec("torch") is not None and importlib.util.find_spec("triton") is not None:
        import torch

        if torch.cuda.is_available():
            return "triton"
    return "opencl"


@dataclass
class ProbeWorker:
    """What ``setup_in_worker`` loads into a calibration worker's state (under ``"probe"``)."""

    backend: Backend
    telemetry: Telemetry


def setup_in_worker(state: dict[str, object], payload: Mapping[str, str]) -> dict[str, object]:
    from kerntune.backends import load_backend

    device = payload.get("device", "")
    backend = load_backend(_backend_for(device), device)
    state["probe"] = ProbeWorker(backend, backend.telemetry())
    target = backend.target()
    return {"target": target.as_dict(), "key": device_key(target.as_dict())}


def probe_in_worker(state: dict[str, object], payload: Mapping[str, float]) -> dict[str, object]:
    """Run the probes of the worker's backend; return rates and the raw medians they came from."""
    worker = state.get("probe")
    if not isinstance(worker, ProbeWorker):
        raise RuntimeError("this worker has no device loaded: call setup_in_worker first")
    from kerntune.backends.torch import TorchBackend

    if isinstance(worker.backend, TorchBackend):
        from kerntune.measure.probes import gpu

        return gpu.probe(worker.backend, worker.telemetry, payload)
    from kerntune.measure.probes import opencl

    return opencl.probe(worker.backend, worker.telemetry, payload)


def calibrate(
    settings: Settings, store: Store, *, device: str = "", force: bool = False, array_bytes: int = 256 << 20
) -> Ceilings:
    """The device's ceilings: from the store when measured in the last 7 days (unless ``force``), else
    measured now under the device's exclusive lock."""
    from filelock import FileLock, Timeout

    from kerntune.exec.pool import Worker

    logs = store.home / "logs"
    worker = Worker(
        (CALIBRATE_SETUP, {"device": device}),
        log_path=logs / f"calibrate-{int(time.time())}.log",
        setup_timeout_s=settings.setup_timeout_s,
    )
    setup = worker.start()
    try:
        key, target = setup["key"], setup["target"]
        if not force:
            cached = latest_calibration(store, key, MAX_AGE_S)
            if cached is not None:
                return Ceilings(**cached, cached=True)
        lock = FileLock(str(store.home / "locks" / f"device-{key}.lock"))
        (store.home / "locks").mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(timeout=settings.lock_timeout_s)
        except Timeout as exc:
            raise UsageError(
                f"another kerntune holds {target['device_name']} (lock {lock.lock_file}); waited "
                f"{settings.lock_timeout_s:g} s: try later or raise KERNTUNE_LOCK_TIMEOUT_S"
            ) from exc
        try:
            outcome = worker.call(CALIBRATE, {"array_bytes": array_bytes}, settings.candidate_timeout_s * 4)
        finally:
            lock.release()
    finally:
        worker.stop()
    if outcome.status != "ok":
        raise UsageError(f"calibration failed ({outcome.kind}): {outcome.reason}")
    ceilings = Ceilings(device_key=key, device=str(target["device_name"]), created=time.time(), **outcome.value)
    save_calibration(store, key, ceilings.record())
    return ceilings
