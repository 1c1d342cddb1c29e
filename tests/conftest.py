"""Shared fixtures: run the real CLI in a subprocess against a temporary store."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "tests" / "specs"
EXAMPLES = ROOT / "examples"
KERNELS = ROOT / "kernels"
DATA = ROOT / "tests" / "data"

# Short measurements keep CPU tests quick; they change how long sampling runs, not what is checked.
FAST_ENV = {
    "KERNTUNE_WARMUP_MS": "10",
    "KERNTUNE_SAMPLE_BUDGET_MS": "100",
    "KERNTUNE_MIN_SAMPLES": "5",
    "KERNTUNE_MAX_SAMPLES": "30",
    "KERNTUNE_FINALISTS": "2",
    "KERNTUNE_CONFIRM_ROUNDS": "1",
}
# Hazard: PoCL reports the host's whole last-level cache (480 MiB on the 2-core machines that run this suite
# here), so a cold-regime flush writes 960 MiB, ~0.1 s of CPU, before every launch: most of the suite's time went
# there. The CPU tests check what a flush does, not how much of a shared L3 it evicts, so on a machine without a
# GPU every process they start flushes 32 MiB. A GPU's tests keep the flush its L2 needs (50 MiB on an H100).
if not any(Path(node).exists() for node in ("/dev/nvidiactl", "/dev/kfd")):
    os.environ.setdefault("KERNTUNE_FLUSH_MB", "32")


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def benchmark_script(name: str) -> Path:
    """``benchmarks/<suite>/<name>.py``: the one script of that name, whichever suite's folder holds it."""
    found = sorted((ROOT / "benchmarks").glob(f"*/{name}.py"))
    assert len(found) == 1, f"benchmarks/*/{name}.py: {len(found)} scripts of that name"
    return found[0]


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<suite>/<name>.py`` as the module ``name`` (its folder on the path, as when the script runs: the
    scripts import each other), registered in ``sys.modules`` so a script's own imports of it get this one."""
    if name in sys.modules:
        return sys.modules[name]
    script = benchmark_script(name)
    if str(script.parent) not in sys.path:
        sys.path.insert(0, str(script.parent))
    found = importlib.util.spec_from_file_location(name, script)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    found.loader.exec_module(module)
    return module


def gemm_variant(dest: Path, module: str, old: str, new: str) -> Path:
    """A copy of kernels/triton_gemm under ``dest`` with ``old`` replaced by ``new`` in one of its modules and that
    module's pin in the copy's spec.py updated: another version of the product GEMM, as a branch would hold it.
    Returns the copy's spec.py."""
    folder = dest / "triton_gemm"
    shutil.copytree(KERNELS / "triton_gemm", folder)
    edited = folder / f"{module}.py"
    text = edited.read_text()
    assert text.count(old) == 1, f"{old!r} is not in {module}.py exactly once"
    edited.write_text(text.replace(old, new))
    spec = folder / "spec.py"
    digest = hashlib.sha256(edited.read_bytes()).hexdigest()[:16]
    spec.write_text(re.sub(rf'"{module}": "[0-9a-f]{{16}}"', f'"{module}": "{digest}"', spec.read_text(), count=1))
    return spec


def poll_store(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of `sql` in a store another process is writing; none while the file or its tables do not exist yet
    (the tuner creates the file before its schema, so a poll can land in between)."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise


def has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.fixture
def kerntune(tmp_path: Path) -> Callable[..., CliResult]:
    """Run ``kerntune ARGS`` with a store in tmp_path; extra environment via ``env=``."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> CliResult:
        full_env = {**os.environ, **FAST_ENV, "KERNTUNE_HOME": str(tmp_path / "store"), **(env or {})}
        began = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "kerntune", *args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            cwd=ROOT,
        )
        # Each call's exit and wall time, shown with a failing test's output (live with -s): a slow test says which
        # command took the time.
        print(
            f"kerntune {' '.join(args)[:160]}: exit {proc.returncode} after {time.perf_counter() - began:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


def failures_by_config(report: dict[str, Any]) -> dict[str, str]:
    """config key (or, for a baseline implementation, its label) → failure kind, for the first shape."""
    shape = report["shapes"][0]
    return {",".join(f"{k}={v}" for k, v in f["config"].items()) or f["label"]: f["failure"] for f in shape["failed"]}


def series_label(candidate: dict[str, Any]) -> str:
    """The label a report chart gives a stored candidate: its role, then its label or config key.

    A run's winner may be a baseline (a spec's default config wins when nothing the search tried beats it),
    so tests must not assume the winner was found by the search.
    """
    key = ",".join(f"{k}={v}" for k, v in candidate["config"].items())
    return f"{candidate['role']}: {candidate.get('label') or key or 'default'}"
