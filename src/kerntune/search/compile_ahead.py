"""Pipelined compilation: a pool of compile workers builds candidates ahead while the device worker times.

Each compile worker is crash-isolated — a subprocess (``exec.pool.Worker``) on this host, or a Ray actor on the
node of the Ray slot it feeds (``exec.ray_slots``) — loads the spec and calls ``evaluate.precompile``: the
compiler runs, nothing is launched (a launch would disturb the kernel being timed), and the binary lands in the
compiler's on-disk cache of that host, so the timing worker's own compile of that config is a cache hit. The
workers run at low priority (``nice``) and leave cores to the timing worker, whose host-side launch latency
enters short samples. Results are kept by (shape, config): asking twice compiles once.
"""

from __future__ import annotations

import os
import queue
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from kerntune.errors import KerntuneError
from kerntune.exec.pool import Outcome, Worker, end
from kerntune.exec.worker import NICE

PRECOMPILE = "kerntune.tune.evaluate:precompile"


def auto_workers(requested: int, vendor: str) -> int:
    """How many compile workers to run: ``requested`` when given (>= 0); otherwise none on a CPU device (the
    compilers would take the very cores whose kernels are being timed) and all cores but three on a GPU host
    (one for the timing worker, one for the tuner, one spare), at most 16."""
    if requested >= 0:
        return requested
    if vendor == "cpu":
        return 0
    return max(1, min(16, (os.cpu_count() or 1) - 3))


class CompileWorker(Protocol):
    """What a compile worker answers: ``start`` (set up), ``call`` (one message, crash- and hang-isolated); it is
    ended with ``exec.pool.end``."""

    name: str

    def start(self) -> object: ...

    def call(self, path: str, payload: Mapping[str, object], timeout_s: float, *, restart: bool = True) -> Outcome: ...

    def stop(self) -> None: ...


def local_compile_workers(
    count: int, setup: tuple[str, Mapping[str, object]], *, log_dir: Path, setup_timeout_s: float
) -> list[Worker]:
    """``count`` subprocesses on this host, at low priority."""
    env = {**os.environ, "KERNTUNE_WORKER_NICE": str(NICE)}
    return [
        Worker(
            setup,
            log_path=log_dir / f"compile-{i}-{secrets.token_hex(2)}.log",
            env=env,
            setup_timeout_s=setup_timeout_s,
        )
        for i in range(count)
    ]


class CompileAhead:
    """``submit`` (shape key, config key, payload) in the order the search will time them; ``result`` blocks
    until that one is compiled. A worker that cannot start makes its items answer ``error`` (the tuner then
    compiles those in the timing worker, as without a pool). The workers are ended on ``close``."""

    def __init__(self, workers: Sequence[CompileWorker], *, timeout_s: float) -> None:
        self._workers = list(workers)
        self._timeout_s = timeout_s
        self._todo: queue.Queue[tuple[tuple[str, str], dict[str, object]] | None] = queue.Queue()
        self._done: dict[tuple[str, str], Outcome] = {}
        self._submitted: set[tuple[str, str]] = set()
        self._busy = 0
        self._starting = len(self._workers)  # workers whose first start has not ended yet
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> CompileAhead:
        for i, worker in enumerate(self._workers):
            thread = threading.Thread(target=self._serve, args=(worker,), name=f"kerntune-compile-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.cancel()
        for _ in self._threads:
            self._todo.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    def submit(self, shape_key: str, config_key: str, payload: Mapping[str, object]) -> None:
        key = (shape_key, config_key)
        with self._cond:
            if key in self._submitted:
                return
            self._submitted.add(key)
        self._todo.put((key, dict(payload)))

    def pending(self, shape_key: str, config_key: str) -> bool:
        return (shape_key, config_key) in self._submitted

    def result(self, shape_key: str, config_key: str) -> Outcome:
        key = (shape_key, config_key)
        with self._cond:
            if key not in self._submitted:
                raise KerntuneError(f"config {config_key} was never submitted for compilation")
            self._cond.wait_for(lambda: key in self._done)
            return self._done[key]

    def wait_started(self, timeout_s: float) -> float:
        """Block until every worker's first start has ended (started or failed), at most ``timeout_s``; return the
        seconds waited. A tuner calls it before its first proposal: the time a pool takes to come up is start-up,
        not the first shape's search share (on the H200 the first shape's first screened config came 6.8 s after
        its baselines, and that shape screened one config)."""
        began = time.monotonic()
        with self._cond:
            self._cond.wait_for(lambda: self._starting <= 0, timeout=timeout_s)
        return time.monotonic() - began

    def cancel(self) -> None:
        """Drop what is queued and wait for the compiles in progress: nothing compiles while finalists are
        confirmed."""
        while True:
            try:
                item = self._todo.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                with self._cond:
                    self._submitted.discard(item[0])
        with self._cond:
            self._cond.wait_for(lambda: self._busy == 0)

    def _serve(self, worker: CompileWorker) -> None:
        # Started at once, not at the first item: loading torch, the compiler and the spec takes seconds per
        # worker, which then overlaps the timing worker's own start and its baselines (measured on the H200:
        # 10 s between the baselines and the first screened config when workers started on demand).
        try:
            worker.start()
            started = True
        except Exception:  # retried at the first item, whose outcome then carries the error
            started = False
        with self._cond:
            self._starting -= 1
            self._cond.notify_all()
        try:
            while True:
                item = self._todo.get()
                if item is None:
                    return
                key, payload = item
                with self._cond:
                    self._busy += 1
                try:
                    if not started:
                        worker.start()
                        started = True
                    outcome = worker.call(PRECOMPILE, payload, self._timeout_s)
                except Exception as exc:  # never leave the tuner waiting on an item that will not come
                    outcome = Outcome("error", kind="setup", reason=f"{type(exc).__name__}: {exc}")
                with self._cond:
                    self._done[key] = outcome
                    self._busy -= 1
                    self._cond.notify_all()
        finally:
            end(worker)
