"""Device slots: where a run's candidates are timed. One slot is one device with one timing process at a time.

A ``Slot`` answers ``start`` (set up, return the setup result: the device's Target), ``call`` (one message, with
the hang and crash isolation of ``exec.pool.Worker``), ``restart``, ``stop`` and ``fresh`` (an unstarted slot on
the same device, for the fresh processes that confirm finalists). The direct path of ``kerntune tune`` uses one
``Worker``; the local pool (``--workers N``) uses one Worker per visible GPU, each pinned with
CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES and holding that GPU's exclusive lock; the Ray executor
(``exec.ray_slots``) puts each slot in a Ray actor.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kerntune.errors import UsageError
from kerntune.exec.pool import Outcome, Worker

if TYPE_CHECKING:
    from filelock import FileLock

LOCK_WAIT_S = 5.0
"""How long a pool slot waits for its GPU's lock before saying which other run holds the device."""


class Slot(Protocol):
    name: str

    def start(self) -> Any: ...

    def call(self, path: str, payload: Mapping[str, object], timeout_s: float, *, restart: bool = True) -> Outcome: ...

    def restart(self) -> None: ...

    def stop(self) -> None: ...

    def fresh(self, log_path: Path) -> Slot: ...


def visible_gpus(env: Mapping[str, str] | None = None) -> list[str]:
    """The GPUs this process may use, as the indices CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES name (or all
    that ``nvidia-smi -L`` / ``rocm-smi`` list); empty without a GPU."""
    env = os.environ if env is None else env
    for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        if env.get(var, "").strip():
            return [d.strip() for d in env[var].split(",") if d.strip()]
    for tool, args, prefix in (("nvidia-smi", ["-L"], "GPU "), ("rocm-smi", ["--showid"], "GPU[")):
        if shutil.which(tool):
            try:
                out = subprocess.run([tool, *args], capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            count = len({line.split(":")[0] for line in out.splitlines() if line.startswith(prefix)})
            if count:
                return [str(i) for i in range(count)]
    return []


class LocalSlot(Worker):
    """A worker process pinned to one GPU (``device``: its index, or "" for a CPU device shared by the pool),
    holding ``<locks>/gpu-<device>.lock`` while it lives so that no other kerntune run times on it meanwhile."""

    def __init__(
        self,
        setup: tuple[str, Mapping[str, object]],
        *,
        device: str,
        log_path: Path,
        lock_dir: Path,
        setup_timeout_s: float,
        index: int = 0,
    ) -> None:
        env = dict(os.environ)
        if device:
            env.update(CUDA_VISIBLE_DEVICES=device, HIP_VISIBLE_DEVICES=device)
        super().__init__(setup, log_path=log_path, env=env, setup_timeout_s=setup_timeout_s)
        self.name = f"gpu {device}" if device else f"cpu {index}"
        self.device, self._lock_dir = device, lock_dir
        self._lock: FileLock | None = None

    def start(self) -> Any:
        if self.device and self._lock is None:
            from filelock import FileLock, Timeout

            self._lock_dir.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(self._lock_dir / f"gpu-{self.device}.lock"))
            try:
                lock.acquire(timeout=LOCK_WAIT_S)
            except Timeout:
                raise UsageError(
                    f"GPU {self.device} is held by another kerntune process ({lock.lock_file}); wait for "
                    "it, or leave this GPU out with CUDA_VISIBLE_DEVICES"
                ) from None
            self._lock = lock
        try:
            return super().start()
        except BaseException:
            self.release()  # a slot that cannot start holds no GPU
            raise

    def release(self) -> None:
        """Stop the process and give the GPU's lock back (the pool is done with this device)."""
        self.stop()
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def local_slots(
    setup: tuple[str, Mapping[str, object]],
    count: int,
    *,
    log_dir: Path,
    lock_dir: Path,
    setup_timeout_s: float,
    tag: str,
) -> list[LocalSlot]:
    """``count`` slots, one per visible GPU (pinned), or ``count`` processes sharing a CPU device when the
    machine has no GPU (PoCL: useful for tests; their timings then share the cores)."""
    if count < 1:
        raise UsageError(f"--workers must be at least 1, got {count}")
    gpus = visible_gpus()
    if gpus and count > len(gpus):
        raise UsageError(f"--workers {count} asks for more GPUs than the {len(gpus)} visible ({', '.join(gpus)})")
    if not gpus and count > (os.cpu_count() or 1):
        raise UsageError(f"--workers {count} on a CPU device asks for more processes than its {os.cpu_count()} cores")
    devices = gpus[:count] if gpus else [""] * count
    return [
        LocalSlot(
            setup,
            device=d,
            log_path=log_dir / f"worker-{tag}-{i}.log",
            lock_dir=lock_dir,
            setup_timeout_s=setup_timeout_s,
            index=i,
        )
        for i, d in enumerate(devices)
    ]
