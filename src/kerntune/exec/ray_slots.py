"""The Ray executor (``kerntune tune --executor ray [--address ADDR]``): each slot is a Ray actor that owns one
device — one GPU (``num_gpus=1``: Ray pins it with CUDA_VISIBLE_DEVICES) on a GPU cluster, one CPU otherwise —
and runs the worker's messages in its own process (``exec.worker.handle``). The driver keeps the search and the
store: every result comes back to it and is written there, once.

Failure handling, mapped onto ``exec.pool.Worker``'s contract: a call that does not answer within its timeout
is a hang (the actor is killed and restarted by Ray); an actor that dies mid-call (its process killed, its node
lost) is restarted by Ray (on another node when its own is gone), set up again, and the call is run once more,
because a lost node is not the candidate's fault — a candidate that kills its actor twice is recorded as a
crash. The driver started the candidate's row before the call and finishes it once, after it: a retried call
never adds a row. The spec must be readable at the same path on every node (a shared filesystem, or a Ray
runtime_env that ships it).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from kerntune.errors import BackendUnavailable, SpecError, UsageError
from kerntune.exec.pool import Outcome, Worker

LOSSES_PER_CALL = 2
"""A call whose actor dies this many times is the candidate's crash; fewer are the cluster's."""


class _DeviceActor:
    """Runs worker messages in the actor's process; its state (spec, device, inputs) lives with the process."""

    def __init__(self) -> None:
        os.environ["KERNTUNE_DISPATCH"] = "off"  # code measured here never reads a deployed table
        self.state: dict[str, Any] = {}

    def run(self, path: str, payload: Any) -> tuple[Any, ...]:
        from kerntune.exec.worker import handle

        return handle(self.state, path, payload)


REACH_S = 5.0
"""How long to try a cluster's head before saying it cannot be reached (Ray itself retries for minutes)."""


def _reachable(address: str) -> None:
    """Refuse a HOST:PORT (or ray://HOST:PORT) nobody answers at, at once and in one line."""
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" and the like: Ray resolves them
    try:
        socket.create_connection((host, int(port)), timeout=REACH_S).close()
    except OSError as exc:
        raise UsageError(f"cannot reach the Ray cluster at {address} ({exc}): start it (ray start --head) or fix "
                         "--address") from None


def connect(address: str) -> Any:
    """Join the Ray cluster at ``address`` ("" starts a local one) and return the ``ray`` module."""
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'kerntune[ray]'") from None
    if not ray.is_initialized():
        if address:
            _reachable(address)
        try:
            ray.init(address=address or None, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        except (ConnectionError, ValueError) as exc:
            raise UsageError(f"cannot join the Ray cluster at {address or '(local)'}: {exc}") from None
    return ray


class RaySlot:
    """One device of the cluster, held by one actor for the run."""

    def __init__(self, ray: Any, index: int, setup: tuple[str, dict[str, Any]], *, gpu: bool,
                 setup_timeout_s: float) -> None:
        self.name = f"ray actor {index}"
        self._ray, self._setup, self._setup_timeout_s = ray, setup, setup_timeout_s
        remote = ray.remote(max_restarts=-1, max_task_retries=0)(_DeviceActor)
        self._actor = remote.options(num_gpus=1 if gpu else 0, num_cpus=0 if gpu else 1).remote()
        self.restarts = 0
        self.setup_result: Any = None

    def start(self) -> Any:
        path, payload = self._setup
        outcome = self.call(path, payload, self._setup_timeout_s, restart=False)
        if outcome.status != "ok":
            error = {"SpecError": SpecError}.get(outcome.kind, BackendUnavailable)
            raise error(f"{self.name}: " + (outcome.reason.splitlines()[0] if outcome.reason else "setup failed"))
        self.setup_result = outcome.value
        return outcome.value

    def call(self, path: str, payload: dict[str, Any], timeout_s: float, *, restart: bool = True) -> Outcome:
        ray = self._ray
        losses: list[str] = []
        while len(losses) < LOSSES_PER_CALL:
            try:
                reply = ray.get(self._actor.run.remote(path, payload), timeout=timeout_s)
                return Worker._outcome(reply)
            except ray.exceptions.GetTimeoutError:
                ray.kill(self._actor, no_restart=False)
                if restart:
                    self.restarts += 1
                    self.start()
                return Outcome("failed", kind="hang", reason=f"no answer within {timeout_s:g} s; actor restarted",
                               restarted=restart)
            except ray.exceptions.RayActorError as exc:
                losses.append(str(exc).splitlines()[0][:200])
                self.restarts += 1
                if path != self._setup[0]:
                    self.start()  # Ray restarted the actor (elsewhere if its node is gone): set it up again
        return Outcome("failed", kind="crash", reason=f"the actor died {len(losses)} times on this call: "
                       f"{losses[-1]}", restarted=True)

    def restart(self) -> None:
        self._ray.kill(self._actor, no_restart=False)
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        """Nothing to do between uses; ``release`` ends the actor."""

    def release(self) -> None:
        self._ray.kill(self._actor, no_restart=True)

    def disconnect(self) -> None:
        """Leave the cluster (a local one is shut down): nothing of Ray's prints after the run's output."""
        self._ray.shutdown()

    def fresh(self, log_path: Path) -> _FreshProcess:
        return _FreshProcess(self)


class _FreshProcess:
    """The same actor's device in a new process (the actor is restarted): what confirmation rounds need. The
    actor keeps its device, so no second actor waits for a GPU this run already holds."""

    def __init__(self, slot: RaySlot) -> None:
        self.slot, self.name = slot, slot.name

    def start(self) -> Any:
        self.slot.restart()
        return self.slot.setup_result

    def call(self, path: str, payload: dict[str, Any], timeout_s: float, *, restart: bool = True) -> Outcome:
        return self.slot.call(path, payload, timeout_s, restart=restart)

    def restart(self) -> None:
        self.slot.restart()

    def stop(self) -> None:
        pass

    def fresh(self, log_path: Path) -> _FreshProcess:
        return _FreshProcess(self.slot)


def ray_slots(address: str, count: int, setup: tuple[str, dict[str, Any]], *, setup_timeout_s: float) -> list[RaySlot]:
    """``count`` actors, one device each: GPUs when the cluster has any, else CPUs."""
    ray = connect(address)
    resources = ray.cluster_resources()
    gpu = resources.get("GPU", 0) >= 1
    have = int(resources.get("GPU" if gpu else "CPU", 0))
    if count < 1 or count > have:
        raise UsageError(f"--workers {count}: the Ray cluster has {have} {'GPUs' if gpu else 'CPUs'}")
    return [RaySlot(ray, i, setup, gpu=gpu, setup_timeout_s=setup_timeout_s) for i in range(count)]
