"""Where a run times its candidates: one worker (the direct path), a local pool with one worker per GPU
(``--workers N``), or Ray actors (``--executor ray``). With several slots the shapes are shared out — each shape
is searched, timed and confirmed on one device only, so timings from two devices are never ranked against each
other — and every slot's results go into the one store of the run (each thread writes through its own SQLite
connection; a row is written by the driver once, whatever the slot went through).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kerntune.errors import UsageError
from kerntune.exec.pool import Worker, end
from kerntune.exec.ray_slots import RaySlot
from kerntune.exec.ray_slots import compile_counts as ray_compile_counts
from kerntune.exec.slots import Slot, local_slots
from kerntune.model import Run, Shape, Target
from kerntune.model.time_plan import TimePlan
from kerntune.search.compile_ahead import auto_workers
from kerntune.settings import Settings
from kerntune.store import Store

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class Placement:
    """``workers``: None for the direct path (one worker on the run's device); N for a pool of N slots."""

    workers: int | None = None
    executor: str = "local"
    address: str = ""

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise UsageError(f"unknown executor {self.executor!r}: one of {', '.join(EXECUTORS)}")
        if self.address and self.executor != "ray":
            raise UsageError("--address names a Ray cluster: use it with --executor ray")


def make_slots(
    placement: Placement, setup: tuple[str, Mapping[str, object]], store: Store, settings: Settings, tag: str
) -> list[Slot]:
    log_dir = store.home / "logs"
    if placement.executor == "ray":
        from kerntune.exec.ray_slots import ray_slots

        return list(
            ray_slots(placement.address, placement.workers or 1, setup, setup_timeout_s=settings.setup_timeout_s)
        )
    if placement.workers is not None:
        return list(
            local_slots(
                setup,
                placement.workers,
                log_dir=log_dir,
                lock_dir=store.home / "locks",
                setup_timeout_s=settings.setup_timeout_s,
                tag=tag,
            )
        )
    return [Worker(setup, log_path=log_dir / f"worker-{tag}.log", setup_timeout_s=settings.setup_timeout_s)]


def start_slots(slots: Sequence[Slot]) -> list[Any]:
    """Start every slot and return their setup results; all must be the same kind of device (one Target):
    a run compares configs on one kind of device only, and a mixed fleet is tuned as one run per kind."""
    setups = [slot.start() for slot in slots]
    targets = [Target.from_dict(s["target"]) for s in setups]
    kinds = {(t.vendor, t.arch, t.device_name, t.versions) for t in targets}
    if len(kinds) > 1:
        labels = sorted({t.label for t in targets})
        raise UsageError(
            f"the workers hold different devices ({'; '.join(labels)}): tune each kind in its own tuning run "
            "(pin the pool with CUDA_VISIBLE_DEVICES)"
        )
    return setups


def compile_counts(slots: Sequence[Slot], requested: int, target: Target) -> list[int]:
    """Compile-ahead workers per started slot (``requested``: KERNTUNE_COMPILE_WORKERS, -1 for automatic): local
    slots share this host's, Ray slots get compile actors on their own nodes; none where timings are not
    claimed (an interpreter: nothing to compile ahead)."""
    if not target.claims_timing:
        return [0] * len(slots)
    ray_slots = [s for s in slots if isinstance(s, RaySlot)]
    vendor = "cpu" if target.on_host_cpu else target.vendor  # a CPU device's compilers would take its cores
    if slots and len(ray_slots) == len(slots):
        return ray_compile_counts(ray_slots, requested, vendor)
    return [auto_workers(requested, vendor) // len(slots)] * len(slots)


def release(slots: Sequence[Slot]) -> None:
    for slot in slots:
        end(slot)
    if slots and hasattr(slots[0], "disconnect"):
        slots[0].disconnect()


class LockedProgress:
    """Serializes a Progress between the pool's threads."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.lock = inner, threading.Lock()

    def planned(self, run: Run, total: int, plan: TimePlan) -> None:
        with self.lock:
            self.inner.planned(run, total, plan)

    def finished(self, label: str, status: str, detail: str) -> None:
        with self.lock:
            self.inner.finished(label, status, detail)


class ShapeQueue:
    """The run's shapes, handed out in order, each once, to the slots that share them."""

    def __init__(self, shapes: Sequence[Shape]) -> None:
        self._todo: queue.SimpleQueue[Shape] = queue.SimpleQueue()
        for shape in shapes:
            self._todo.put(shape)

    def take(self) -> Shape | None:
        """The next shape, or None when all are taken."""
        try:
            return self._todo.get_nowait()
        except queue.Empty:
            return None

    def waiting(self) -> int:
        """How many shapes no slot has taken yet."""
        return self._todo.qsize()


def share_shapes(shapes: Sequence[Shape], slots: Sequence[Slot], work: Callable[[Slot, ShapeQueue], None]) -> None:
    """Run ``work(slot, queue)`` in one thread per slot, each taking the shapes from one ``ShapeQueue``. The
    first error of any thread is raised after all have ended."""
    todo = ShapeQueue(shapes)

    if len(slots) == 1:
        work(slots[0], todo)  # the direct path: in this thread (Ctrl-C stops the search where it is)
        return
    errors: list[BaseException] = []

    def body(slot: Slot) -> None:
        try:
            work(slot, todo)
        except BaseException as exc:  # handed to the caller below
            errors.append(exc)
            while todo.take() is not None:  # the others stop taking shapes too
                pass

    threads = [threading.Thread(target=body, args=(slot,), name=f"kerntune-{slot.name}") for slot in slots]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        time.sleep(0.05)  # joined in a loop: Ctrl-C still reaches the main thread
    if errors:
        raise errors[0]
