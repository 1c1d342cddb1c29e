"""``Target``: where a candidate runs — everything that can make a tuned result wrong elsewhere."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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
    def on_host_cpu(self) -> bool:
        """Whether the device is the host's own CPU (PoCL, Triton's interpreter, torch on the CPU, Mesa's
        lavapipe): its vendor string names the CPU's maker (``AuthenticAMD``, ``GenuineIntel``), so the vendor
        alone does not say it."""
        return self.vendor == "cpu" or self.arch.startswith("cpu") or "llvmpipe" in self.device_name.lower()

    @property
    def label(self) -> str:
        return f"{self.device_name} ({self.arch}, {self.compute_units} CU, {self.backend})"
