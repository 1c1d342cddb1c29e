"""A table's validators hold every version each backend records for its run: a table tuned under another OpenCL
driver, pyopencl, Vulkan driver or HIP is not applied by the runtime."""

from __future__ import annotations

import pytest

from kerntune.deploy.artifacts import table_header
from kerntune.model import Budget, Run, Shape, Target

RECORDED = {
    "opencl": {"opencl": "OpenCL 3.0 PoCL 6.0", "driver": "6.0", "pyopencl": "2025.1"},
    "vulkan": {"vulkan": "1.3.255", "driver": "llvmpipe Mesa 24.2", "memory": "device-local"},
    "hip": {"hip": "6.2.41133", "torch": "2.13.0", "triton": "3.9.0"},
    "cuda": {"cuda": "12.8", "driver": "580.159.04", "torch": "2.13.0", "triton": "3.9.0"},
}


@pytest.mark.parametrize("backend", sorted(RECORDED))
def test_every_version_a_backend_records_is_a_validator(backend: str) -> None:
    versions = RECORDED[backend]
    target = Target(backend, "vendor", "arch", "device", 4, tuple(sorted(versions.items())))
    run = Run("r1", "vector_add", "spec.py", "abc", target, "race", Budget(), (Shape.of({"N": 1}),), "float32", 0)
    validators = table_header(run)["validators"]
    assert {k: validators.get(k) for k in versions if k != "memory"} == {
        k: v for k, v in versions.items() if k != "memory"
    }  # memory is a placement setting, not a version
    assert "kerntune" in validators
