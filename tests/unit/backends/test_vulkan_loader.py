"""Why no Vulkan driver loaded, said from the ICD files themselves (no Vulkan needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerntune.backends.vulkan_loader import icd_files, library_problem, why_no_driver


def _icd(folder: Path, name: str, library: str) -> Path:
    path = folder / name
    path.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": {"library_path": library}}))
    return path


def test_each_driver_file_says_why_its_library_did_not_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = _icd(tmp_path, "nvidia_icd.json", "libGLX_nvidia_not_here.so.0")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    loads = _icd(tmp_path, "libc_icd.json", "libc.so.6")  # a library that does load: the driver refused instead
    monkeypatch.setenv("VK_DRIVER_FILES", f"{missing}:{broken}:{loads}")
    monkeypatch.delenv("VK_ICD_FILENAMES", raising=False)
    assert icd_files() == ([missing, broken, loads], "VK_DRIVER_FILES")
    assert "libGLX_nvidia_not_here.so.0" in str(library_problem(missing))
    assert str(library_problem(broken)).startswith("not an ICD file")
    assert library_problem(loads) is None
    said = why_no_driver()
    assert "nvidia_icd.json: libGLX_nvidia_not_here.so.0" in said and "libc_icd.json: its library loads" in said
    assert "LD_LIBRARY_PATH" in said


def test_a_folder_in_the_variable_is_searched_and_an_empty_one_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VK_ICD_FILENAMES", raising=False)
    monkeypatch.setenv("VK_DRIVER_FILES", str(tmp_path))
    assert icd_files() == ([], "VK_DRIVER_FILES")
    assert why_no_driver().startswith("no Vulkan driver (ICD) file in VK_DRIVER_FILES")
    relative = tmp_path / "drivers"
    relative.mkdir()
    icd = _icd(relative, "local.json", "./libmissing_driver.so")  # from the file's folder, as the loader reads
    assert icd_files()[0] == [] and str(relative / "libmissing_driver.so") in str(library_problem(icd))
