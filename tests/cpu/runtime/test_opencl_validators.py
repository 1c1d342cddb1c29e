"""A table tuned under another OpenCL version, driver or pyopencl is not applied, on PoCL: the runtime reads the
same versions the OpenCL backend recorded for the tuning (pyopencl from what the program loaded, the OpenCL version
and driver from the device it launches on)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerntune.runtime.dispatch import Dispatcher, live_versions
from kerntune.settings import Settings

cl = pytest.importorskip("pyopencl")

DEFAULT = {"LS": 64}


def _table(path: Path, validators: dict[str, str]) -> Path:
    entry = {"key": {"op": "vector_add", "N": 1024}, "config": {"LS": 256}}
    path.write_text(json.dumps({"schema": 1, "validators": validators, "entries": [entry]}))
    return path


@pytest.mark.parametrize("stale", ["opencl", "driver", "pyopencl"])
def test_a_stale_opencl_validator_is_a_miss(tmp_path: Path, stale: str) -> None:
    from kerntune.backends.opencl import OpenCLBackend

    backend = OpenCLBackend()
    recorded = {k: v for k, v in backend.target().versions if k in ("opencl", "driver", "pyopencl")}
    live = live_versions(opencl_device=backend.device)
    assert {k: live[k] for k in recorded} == recorded  # the runtime reads what the backend recorded, one way

    def dispatcher(validators: dict[str, str]) -> Dispatcher:
        return Dispatcher(
            _table(tmp_path / f"{len(validators)}-{stale}.json", validators),
            key=lambda n: {"op": "vector_add", "N": n},
            default=DEFAULT,
            versions=live,
            settings=Settings(),
        )

    assert dispatcher(recorded).select(1024) == {"LS": 256}  # tuned here: applied
    with pytest.warns(RuntimeWarning, match=f"{stale} other-version \\(this process: "):
        d = dispatcher({**recorded, stale: "other-version"})
    assert d.select(1024) == DEFAULT and d.stats()["default"] == 1 and d.stats()["exact"] == 0
