"""Telemetry read beside every measurement: SM and memory clocks, power, temperature, throttle reasons, and the
processes holding a compute context on the device: "another tenant's load lands directly in your numbers", so a
measurement taken while a second process was on the GPU is flagged (``other_tenant``), as throttling is. The
count, not the process ids, decides: in a container NVML reports host pids, our own among them under another
number; the measuring process is one of the count.

NVIDIA through NVML (the ``nvidia-ml-py`` package); AMD through amdsmi's GPU metrics table (written from
the amdsmi Python API, not yet run on an AMD GPU: no AMD device is reachable from this project's machines);
elsewhere ``Unavailable`` says why there is none. Reading never raises: a telemetry failure must not fail a
candidate, so it becomes ``{"available": False, "reason": ...}``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

from kerntune.devices.own_processes import own_gpu_processes

# NVML clock-event reason bits (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*). Idle and
# application-clock settings are not throttling; the rest mean the clock was held below what it could run.
_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
OWN_REFRESH_S = 2.0
"""How often the count of kerntune's own processes with a CUDA context is re-read (a /proc walk)."""
THROTTLING = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)


def is_throttling(reason: str) -> bool:
    return reason in THROTTLING or reason.startswith("amd_throttle_status=")


def decode_reasons(mask: int) -> list[str]:
    """Names of the set bits of an NVML clock-event reason mask (unknown bits as hex)."""
    names = [name for bit, name in _REASONS.items() if mask & bit]
    unknown = mask & ~sum(_REASONS)
    if unknown:
        names.append(hex(unknown))
    return names


class Reading(TypedDict, total=False):
    """One telemetry reading, or ``available: False`` and the ``reason`` where none could be taken."""

    sm_mhz: float
    mem_mhz: float
    power_w: float
    temp_c: float
    reasons: list[str]
    compute_processes: int
    own_processes: int
    util_pct: int
    available: bool
    reason: str


class Telemetry(Protocol):
    available: bool

    def read(self) -> Reading:
        """One reading: ``sm_mhz``, ``mem_mhz``, ``power_w``, ``temp_c``, ``reasons`` (list of names)."""
        ...


@dataclass
class Unavailable:
    reason: str
    available: bool = False

    def read(self) -> Reading:
        return {"available": False, "reason": self.reason}


class Nvml:
    """NVML readings of one GPU, found by UUID (robust to CUDA_VISIBLE_DEVICES) or else by index."""

    available = True

    def __init__(self, uuid: str | None, index: int) -> None:
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        handle = None
        if uuid:
            text = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
            with contextlib.suppress(pynvml.NVMLError):
                handle = pynvml.nvmlDeviceGetHandleByUUID(text)
        self.handle = handle if handle is not None else pynvml.nvmlDeviceGetHandleByIndex(index)
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        self._own: int | None = None
        self._own_at = -OWN_REFRESH_S

    def read(self) -> Reading:
        nvml, h = self.nvml, self.handle
        try:
            return {
                "sm_mhz": int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
                "mem_mhz": int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)),
                "power_w": nvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "temp_c": int(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)),
                "reasons": decode_reasons(int(self._reasons(h))),
                **self._tenants(),
            }
        except nvml.NVMLError as exc:
            return {"available": False, "reason": f"NVML read failed: {exc}"}

    def _tenants(self) -> Reading:
        """Compute processes on the device, how many of them are this kerntune command's own (``own_processes``,
        re-read from /proc at most every ``OWN_REFRESH_S``), and the utilization; nothing where NVML will not say
        (a read that fails here costs the tenant check, never the clocks)."""
        nvml, h = self.nvml, self.handle
        found: Reading = {}
        with contextlib.suppress(nvml.NVMLError, AttributeError):
            found["compute_processes"] = len(nvml.nvmlDeviceGetComputeRunningProcesses(h))
            now = time.monotonic()
            if now - self._own_at > OWN_REFRESH_S:
                self._own, self._own_at = own_gpu_processes(), now
            if self._own is not None:
                found["own_processes"] = self._own
        with contextlib.suppress(nvml.NVMLError, AttributeError):
            found["util_pct"] = int(nvml.nvmlDeviceGetUtilizationRates(h).gpu)
        return found


_AMD_NA = (0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)
"""amdsmi's "not available" sentinels in the GPU metrics table."""


class AmdSmi:
    """amdsmi GPU metrics of one GPU by index: gfx and memory clocks (MHz), socket power (W), hotspot
    temperature (°C) and the throttle-status bitmask (any set bit counts as throttled)."""

    available = True

    def __init__(self, index: int) -> None:
        import amdsmi

        self.amdsmi = amdsmi
        amdsmi.amdsmi_init()
        self.handle = amdsmi.amdsmi_get_processor_handles()[index]

    def read(self) -> Reading:
        try:
            m = self.amdsmi.amdsmi_get_gpu_metrics_info(self.handle)
        except Exception as exc:
            return {"available": False, "reason": f"amdsmi read failed: {exc}"}

        def value(*keys: str) -> float | None:
            for key in keys:
                raw = m.get(key)
                if isinstance(raw, (int, float)) and raw not in _AMD_NA:
                    return float(raw)
            return None

        status = int(value("indep_throttle_status", "throttle_status") or 0)
        sm_mhz = value("current_gfxclk", "average_gfxclk_frequency")
        if sm_mhz is None:
            return {"available": False, "reason": "amdsmi's metrics table has no gfx clock on this GPU"}
        reading: Reading = {
            "sm_mhz": sm_mhz,
            "mem_mhz": value("current_uclk", "average_uclk_frequency") or 0.0,
            "power_w": value("current_socket_power", "average_socket_power") or 0.0,
            "temp_c": value("temperature_hotspot", "temperature_edge") or 0.0,
            "reasons": [f"amd_throttle_status={status:#x}"] if status else [],
        }
        with contextlib.suppress(Exception):
            reading["compute_processes"] = len(self.amdsmi.amdsmi_get_gpu_process_list(self.handle))
        return reading


def open_telemetry(vendor: str, uuid: str | None = None, index: int = 0) -> Telemetry:
    """The telemetry reader for a device of ``vendor`` (``nvidia``, ``amd``, anything else)."""
    if vendor == "nvidia":
        try:
            return Nvml(uuid, index)
        except ImportError:
            return Unavailable("nvidia-ml-py is not installed: pip install nvidia-ml-py")
        except Exception as exc:  # NVMLError_LibraryNotFound, driver mismatch, ...
            return Unavailable(f"NVML unavailable: {exc}")
    if vendor == "amd":
        try:
            return AmdSmi(index)
        except ImportError:
            return Unavailable("amdsmi is not installed: pip install amdsmi (matching the ROCm version)")
        except Exception as exc:
            return Unavailable(f"amdsmi unavailable: {exc}")
    return Unavailable(f"no telemetry for a {vendor or 'CPU'} device")


@dataclass
class Recorder:
    """Readings taken through a measurement, summarized into what ``Conditions.telemetry`` holds."""

    source: Telemetry
    readings: list[Reading] = field(default_factory=list)

    def take(self) -> Reading:
        reading = self.source.read()
        if reading.get("available", True):
            self.readings.append(reading)
        return reading

    def summary(self, extra: Mapping[str, object] | None = None) -> Mapping[str, object]:
        """min/max clocks, max power and temperature, every reason seen, and ``throttled``; or, where there is
        no telemetry, ``{"available": False, "reason": ...}`` (never silently empty)."""
        if not self.source.available:
            return self.source.read()
        if not self.readings:
            return {"available": False, "reason": "every telemetry read failed"}
        r = self.readings
        reasons = sorted({name for x in r for name in x["reasons"]})
        summary: dict[str, object] = {
            "sm_mhz_min": min(x["sm_mhz"] for x in r),
            "sm_mhz_max": max(x["sm_mhz"] for x in r),
            "mem_mhz_min": min(x["mem_mhz"] for x in r),
            "mem_mhz_max": max(x["mem_mhz"] for x in r),
            "power_w_max": max(x["power_w"] for x in r),
            "temp_c_max": max(x["temp_c"] for x in r),
            "reasons": reasons,
            "throttled": any(is_throttling(x) for x in reasons),
            "readings": len(r),
            "available": True,
        }
        counted = [x for x in r if "compute_processes" in x]
        if counted:  # beyond this command's own processes with a context (at least the measuring one): a tenant
            summary["compute_processes_max"] = max(int(x["compute_processes"]) for x in counted)
            summary["other_tenant"] = any(
                int(x["compute_processes"]) > max(int(x.get("own_processes") or 0), 1) for x in counted
            )
            own = [int(x["own_processes"]) for x in counted if x.get("own_processes") is not None]
            if own:
                summary["own_processes_max"] = max(own)
        summary.update(extra or {})
        return summary
