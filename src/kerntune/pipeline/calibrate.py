"""``kerntune calibrate``: what this device attains, measured — copy and triad bandwidth, the FMA rate of a
register-only kernel, and launch latency — cached per device for 7 days.

The probes run in a worker with kerntune's own measurement protocol (warm regime: each array is several times
the last-level cache, so every pass streams from memory anyway). Only one calibration runs per device at a
time: another waits on the device's lock up to ``KERNTUNE_LOCK_TIMEOUT_S`` seconds (0: refuse at once), since
two probes sharing a device would each measure half of it. Backends: OpenCL (PoCL's CPU device included).
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kerntune.errors import UsageError
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.calibrations import latest_calibration, save_calibration

CALIBRATE_SETUP = "kerntune.pipeline.calibrate:setup_in_worker"
CALIBRATE = "kerntune.pipeline.calibrate:probe_in_worker"
MAX_AGE_S = 7 * 24 * 3600.0
FMA_ITERS = 4096
FMA_CHAINS = 4
FMA_WIDTH = 16
"""Independent float16 chains per work-item: 64 independent multiply-adds per iteration cover the FMA latency
on every core's pipes. The probe writes ``x * m + k`` and lets the compiler contract it: ``fma()`` and
``mad()`` became library calls on PoCL's CPU device (6.3 against 159.6 GFLOP/s: benchmarks/RESULTS.md)."""

_T = f"float{FMA_WIDTH}"
FMA_KERNEL = (  # written out chain by chain: an array of chains stayed in memory on PoCL (a slower probe)
    "__kernel void fma_rate(__global float* out, int iters) {\n"
    + "".join(f"    {_T} x{j} = ({_T})(get_global_id(0) + {j});\n" for j in range(FMA_CHAINS))
    + f"    const {_T} m = ({_T})(0.999f), k = ({_T})(0.001f);\n"
    + "    for (int i = 0; i < iters; i++) {\n"
    + "".join(f"        x{j} = x{j} * m + k;\n" for j in range(FMA_CHAINS))
    + "    }\n"
    + f"    {_T} s = " + " + ".join(f"x{j}" for j in range(FMA_CHAINS)) + ";\n"
    + "    out[get_global_id(0)] = s.s0 + s.s1;\n}"
)

OPENCL_PROBES = f"""
__kernel void copy(__global const float4* a, __global float4* b) {{
    size_t i = get_global_id(0); b[i] = a[i];
}}
__kernel void triad(__global float4* a, __global const float4* b, __global const float4* c, float s) {{
    size_t i = get_global_id(0); a[i] = b[i] + s * c[i];
}}
{FMA_KERNEL}
__kernel void empty(__global float* out) {{ }}
"""


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings of one device (rates per second; latency in milliseconds)."""

    device_key: str
    device: str
    copy_bytes_per_s: float
    triad_bytes_per_s: float
    fma_flops_per_s: float
    launch_latency_ms: float
    matrix_flops_per_s: dict[str, float] = field(default_factory=dict)
    """Per dtype, through the vendor library (none on a CPU OpenCL device)."""
    created: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    cached: bool = False

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity where the roofline's memory slope meets the FMA ceiling."""
        return self.fma_flops_per_s / self.copy_bytes_per_s


def device_key(target: dict[str, Any]) -> str:
    """Backend, device, architecture, compute units and driver/toolkit versions: a different one measures anew."""
    text = json.dumps({k: target.get(k) for k in ("backend", "device_name", "arch", "compute_units", "versions")},
                      sort_keys=True)
    return hashlib.md5(text.encode()).hexdigest()[:16]


def setup_in_worker(state: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    from kerntune.backends import load_backend

    backend = load_backend(payload["backend"], payload.get("device", ""))
    state.update(backend=backend, telemetry=backend.telemetry())
    target = backend.target()
    return {"target": target.as_dict(), "key": device_key(target.as_dict())}


def probe_in_worker(state: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Run the probes; return rates and the raw medians they came from."""
    import numpy as np

    from kerntune.model import OpenCLKernel
    from kerntune.pipeline.measure import MeasureOptions, measure

    backend = state["backend"]
    if backend.name != "opencl":
        raise UsageError(f"calibration of the {backend.name} backend is not built yet: only OpenCL devices today")
    options = MeasureOptions(regime="warm", warmup_ms=payload.get("warmup_ms", 100.0), budget_ms=1000.0)
    n4 = max(1 << 20, int(payload["array_bytes"]) // 16)  # float4 elements per array
    host = {"a": np.zeros(n4 * 4, np.float32), "b": np.ones(n4 * 4, np.float32), "c": np.ones(n4 * 4, np.float32)}
    arrays = backend.place(host)

    def time_kernel(name: str, args: dict[str, Any], global_size: int) -> float:
        def grid(meta: Any) -> tuple[tuple[int], None]:
            return (global_size,), None

        kernel = OpenCLKernel(OPENCL_PROBES, name, grid)
        compiled = backend.compile(kernel, {}, {}, args)
        m = measure(backend, [lambda: compiled.launch(args)], options, state["telemetry"])
        return m.median_ms

    copy_ms = time_kernel("copy", {"a": arrays["a"], "b": arrays["b"]}, n4)
    triad_ms = time_kernel("triad", {"a": arrays["a"], "b": arrays["b"], "c": arrays["c"], "s": np.float32(3.0)}, n4)
    items = int(payload.get("fma_items", 1 << 14))
    out = backend.place({"out": np.zeros(items, np.float32)})["out"]
    fma_ms = time_kernel("fma_rate", {"out": out, "iters": np.int32(FMA_ITERS)}, items)
    empty = OpenCLKernel(OPENCL_PROBES, "empty", lambda meta: ((1,), None))
    compiled = backend.compile(empty, {}, {}, {"out": out})
    walls = []
    for _ in range(200):  # host-side: submit an empty kernel and wait for it, as a program does per launch
        start = time.perf_counter()
        compiled.launch({"out": out})
        backend.synchronize()
        walls.append((time.perf_counter() - start) * 1e3)
    bytes_per_array = n4 * 16
    flops = 2.0 * FMA_WIDTH * FMA_CHAINS * FMA_ITERS * items  # a multiply-add is 2 flops per lane
    return {"copy_bytes_per_s": 2 * bytes_per_array / (copy_ms * 1e-3),
            "triad_bytes_per_s": 3 * bytes_per_array / (triad_ms * 1e-3),
            "fma_flops_per_s": flops / (fma_ms * 1e-3), "launch_latency_ms": statistics.median(walls),
            "details": {"array_bytes": bytes_per_array, "copy_ms": copy_ms, "triad_ms": triad_ms, "fma_ms": fma_ms,
                        "fma_items": items, "fma_iters": FMA_ITERS, "regime": "warm"}}


def calibrate(settings: Settings, store: Store, *, backend: str = "opencl", device: str = "",
              force: bool = False, array_bytes: int = 256 << 20) -> Ceilings:
    """The device's ceilings: from the store when measured in the last 7 days (unless ``force``), else
    measured now under the device's exclusive lock."""
    from filelock import FileLock, Timeout

    from kerntune.exec.pool import Worker

    logs = store.home / "logs"
    worker = Worker((CALIBRATE_SETUP, {"backend": backend, "device": device}),
                    log_path=logs / f"calibrate-{int(time.time())}.log", setup_timeout_s=settings.setup_timeout_s)
    setup = worker.start()
    try:
        key, target = setup["key"], setup["target"]
        if not force:
            cached = latest_calibration(store, key, MAX_AGE_S)
            if cached is not None:
                return Ceilings(**{**cached, "cached": True})
        lock = FileLock(str(store.home / "locks" / f"device-{key}.lock"))
        (store.home / "locks").mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(timeout=settings.lock_timeout_s)
        except Timeout as exc:
            raise UsageError(f"another kerntune holds {target['device_name']} (lock {lock.lock_file}); waited "
                             f"{settings.lock_timeout_s:g} s: try later or raise KERNTUNE_LOCK_TIMEOUT_S") from exc
        try:
            outcome = worker.call(CALIBRATE, {"array_bytes": array_bytes}, settings.candidate_timeout_s * 4)
        finally:
            lock.release()
    finally:
        worker.stop()
    if outcome.status != "ok":
        raise UsageError(f"calibration failed ({outcome.kind}): {outcome.reason}")
    ceilings = Ceilings(device_key=key, device=str(target["device_name"]), created=time.time(), **outcome.value)
    data = asdict(ceilings)
    data.pop("cached")
    save_calibration(store, key, data)
    return ceilings
