"""The driver's statistics of a Vulkan pipeline read as kerntune's names: ``registers`` and ``spills`` only where
the driver's own statistic names say which they are (NVIDIA's and RADV's wording), the rest kept as given."""

from __future__ import annotations

import pytest

from kerntune.errors import BackendUnavailable

try:
    from kerntune.backends import vulkan_inspect
except BackendUnavailable as exc:  # no vulkan bindings or loader here (CI installs both)
    pytest.skip(str(exc), allow_module_level=True)


def test_registers_and_spills_are_named_only_from_the_driver_s_own_names() -> None:
    nvidia = vulkan_inspect.Executable("Compute Shader", "", 32, {"Register Count": 40, "Shared Memory Size": 1024})
    radv = vulkan_inspect.Executable(
        "Compute Shader", "", 64, {"VGPRs": 24, "SGPRs": 32, "Spilled SGPRs": 0, "Spilled VGPRs": 3, "Code size": 900}
    )
    other = vulkan_inspect.Executable("main", "", 8, {"Instruction Count": 120, "Has spills": True})
    assert vulkan_inspect.summary([nvidia]) == {
        "subgroup_size": 32,
        "Register Count": 40,
        "Shared Memory Size": 1024,
        "registers": 40,
    }
    read = vulkan_inspect.summary([radv])
    assert read["registers"] == 24 and read["spills"] == 3 and read["SGPRs"] == 32
    read = vulkan_inspect.summary([other])
    assert "registers" not in read and "spills" not in read and read["Has spills"] is True
    assert vulkan_inspect.summary([]) == {}
