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

Compilation runs on CPU workers: each slot gets compile actors (``num_cpus=1``, no GPU) placed on its own node,
so the binaries they build land in the compiler's on-disk cache that the slot's timing reads (the node's
Triton or kerntune cache). They see the slot's GPU (its CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES, with Ray
told not to reset it) to learn its target, and launch nothing on it. Should that node lack the CPUs, or be
lost, Ray places them on another node: their compile results (failures, resources) still hold — the fleet is
one kind of device — and the slot then compiles again itself (a cache miss, not a wrong result).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from kerntune.errors import BackendUnavailable, SpecError, UsageError
from kerntune.exec.pool import Outcome, Worker
from kerntune.exec.worker import NICE

LOSSES_PER_CALL = 2
"""A call whose actor dies this many times is the candidate's crash; fewer are the cluster's."""
VISIBLE = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
RESTARTED = "restarted"
"""The reply of an actor whose process is not the one a message was meant for."""
POLL_S = 0.1
MAX_COMPILERS = 16
"""Compile actors per slot when the count is automatic: more do not keep a timing worker busier."""


class _DeviceActor:
    """Runs worker messages in the actor's process; its state (spec, device, inputs) lives with the process,
    which a random ``incarnation`` names: Ray restarts an actor in a new process, with no state."""

    def __init__(self) -> None:
        from kerntune.exec.worker import yield_cpu

        os.environ["KERNTUNE_DISPATCH"] = "off"  # code measured here never reads a deployed table
        yield_cpu()  # a compile actor (KERNTUNE_WORKER_NICE in its runtime_env) yields to the timing on its node
        self.state: dict[str, object] = {}
        self.incarnation = secrets.token_hex(8)

    def hello(self) -> tuple[str, str, dict[str, str]]:
        """This process's incarnation, its node and the device variables Ray set for it."""
        import ray

        visible = {v: os.environ[v] for v in VISIBLE if v in os.environ}
        return self.incarnation, ray.get_runtime_context().get_node_id(), visible

    def run(self, path: str, payload: object, incarnation: str) -> tuple[object, ...]:
        """One message, run only by the process it was meant for: a restarted actor answers RESTARTED (the
        message would find no spec, device or inputs here — or, for a setup, set up a process nobody awaited)."""
        if incarnation != self.incarnation:
            return (RESTARTED, self.incarnation)
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
        raise UsageError(
            f"cannot reach the Ray cluster at {address} ({exc}): start it (ray start --head) or fix --address"
        ) from None


def connect(address: str) -> ModuleType:
    """Join the Ray cluster at ``address`` ("" starts a local one) and return the ``ray`` module."""
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'kerntune[ray]'") from None
    if not ray.is_initialized():
        if address:
            _reachable(address)
        try:
            ray.init(address=address or None, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except (ConnectionError, ValueError) as exc:
            raise UsageError(f"cannot join the Ray cluster at {address or '(local)'}: {exc}") from None
    return ray


class RaySlot:
    """One device of the cluster, held by one actor for the run (``options``: the actor's Ray resources and
    placement). A compile worker is a RaySlot too: the same calls, on an actor that holds CPUs only."""

    def __init__(
        self,
        ray: ModuleType,
        name: str,
        setup: tuple[str, Mapping[str, object]],
        *,
        options: dict[str, Any],
        setup_timeout_s: float,
    ) -> None:
        self.name = name
        self._ray, self._setup, self._setup_timeout_s = ray, setup, setup_timeout_s
        self._actor = ray.remote(max_restarts=-1, max_task_retries=0)(_DeviceActor).options(**options).remote()
        self.cpus = float(options.get("num_cpus", 0))
        self.restarts = 0
        self.setup_result: Any = None
        self.node = ""  # where the actor runs, and the device variables Ray gave it: known once started
        self.visible: dict[str, str] = {}
        self._incarnation = ""  # the process set up last

    def start(self) -> Any:
        """Set up the actor's current process — a new one, not the process last set up: ``ray.kill`` is
        asynchronous, and a setup that reached the dying process would leave the restarted one without state
        (and a confirmation's "fresh process" not fresh)."""
        path, payload = self._setup
        for _ in range(LOSSES_PER_CALL + 1):
            self._await_new_process()
            try:
                reply = self._ray.get(
                    self._actor.run.remote(path, payload, self._incarnation), timeout=self._setup_timeout_s
                )
            except self._ray.exceptions.GetTimeoutError:
                self._ray.kill(self._actor, no_restart=False)
                raise BackendUnavailable(
                    f"{self.name}: setup gave no answer within {self._setup_timeout_s:g} s (KERNTUNE_SETUP_TIMEOUT_S)"
                ) from None
            except self._ray.exceptions.RayActorError:
                continue  # died while setting up: its next process is awaited and set up
            if reply[0] == RESTARTED:
                continue
            outcome = Worker._outcome(reply)
            if outcome.status != "ok":
                error = {"SpecError": SpecError}.get(outcome.kind, BackendUnavailable)
                raise error(f"{self.name}: " + (outcome.reason.splitlines()[0] if outcome.reason else "setup failed"))
            self.setup_result = outcome.value
            return outcome.value
        raise BackendUnavailable(f"{self.name}: the actor died {LOSSES_PER_CALL + 1} times while being set up")

    def _await_new_process(self) -> None:
        """Wait until the actor answers from a process other than the one last set up (any, the first time),
        and learn its incarnation, node and device variables."""
        ray, last = self._ray, self._incarnation
        deadline = time.monotonic() + self._setup_timeout_s
        while time.monotonic() < deadline:
            try:
                incarnation, self.node, self.visible = ray.get(
                    self._actor.hello.remote(), timeout=max(0.1, deadline - time.monotonic())
                )
            except ray.exceptions.RayActorError:  # restarting (ActorUnavailableError) or between processes
                time.sleep(POLL_S)
                continue
            except ray.exceptions.GetTimeoutError:
                break
            if incarnation != last:
                self._incarnation = incarnation
                return
            time.sleep(POLL_S)  # the old process still answers: the kill has not landed yet
        raise BackendUnavailable(f"{self.name}: the actor did not come back within {self._setup_timeout_s:g} s")

    def compile_workers(self, count: int) -> list[RaySlot]:
        """``count`` compile actors on this slot's node (preferred, not required: see the module's note), each
        seeing this slot's device, at low priority. Started by their user (``CompileAhead``)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        env = {
            **self.visible,
            **{f"RAY_EXPERIMENTAL_NOSET_{v}": "1" for v in self.visible},
            "KERNTUNE_WORKER_NICE": str(NICE),
        }
        options = {
            "num_cpus": 1,
            "num_gpus": 0,
            "runtime_env": {"env_vars": env},
            "scheduling_strategy": NodeAffinitySchedulingStrategy(self.node, soft=True),
        }
        return [
            RaySlot(
                self._ray,
                f"{self.name} compiler {i}",
                self._setup,
                options=options,
                setup_timeout_s=self._setup_timeout_s,
            )
            for i in range(count)
        ]

    def call(self, path: str, payload: Mapping[str, object], timeout_s: float, *, restart: bool = True) -> Outcome:
        ray = self._ray
        losses: list[str] = []
        while len(losses) < LOSSES_PER_CALL:
            try:
                reply = ray.get(self._actor.run.remote(path, payload, self._incarnation), timeout=timeout_s)
            except ray.exceptions.GetTimeoutError:
                ray.kill(self._actor, no_restart=False)
                if restart:
                    self.restarts += 1
                    self.start()
                return Outcome(
                    "failed",
                    kind="hang",
                    reason=f"no answer within {timeout_s:g} s; actor restarted",
                    restarted=restart,
                )
            except ray.exceptions.RayActorError as exc:
                losses.append(str(exc).splitlines()[0][:200])
                self.restarts += 1
                self.start()  # Ray restarted the actor (elsewhere if its node is gone): set it up again
                continue
            if reply[0] == RESTARTED:  # replaced while idle (its node lost, say): the message never ran
                self.restarts += 1
                self.start()
                continue
            return Worker._outcome(reply)
        return Outcome(
            "failed",
            kind="crash",
            reason=f"the actor died {len(losses)} times on this call: {losses[-1]}",
            restarted=True,
        )

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

    def call(self, path: str, payload: Mapping[str, object], timeout_s: float, *, restart: bool = True) -> Outcome:
        return self.slot.call(path, payload, timeout_s, restart=restart)

    def restart(self) -> None:
        self.slot.restart()

    def stop(self) -> None:
        pass

    def fresh(self, log_path: Path) -> _FreshProcess:
        return _FreshProcess(self.slot)


def ray_slots(
    address: str, count: int, setup: tuple[str, Mapping[str, object]], *, setup_timeout_s: float
) -> list[RaySlot]:
    """``count`` actors, one device each: GPUs when the cluster has any, else CPUs."""
    ray = connect(address)
    resources = ray.cluster_resources()
    gpu = resources.get("GPU", 0) >= 1
    have = int(resources.get("GPU" if gpu else "CPU", 0))
    if count < 1 or count > have:
        raise UsageError(f"--workers {count}: the Ray cluster has {have} {'GPUs' if gpu else 'CPUs'}")
    options = {"num_gpus": 1, "num_cpus": 0} if gpu else {"num_gpus": 0, "num_cpus": 1}
    return [
        RaySlot(ray, f"ray actor {i}", setup, options=options, setup_timeout_s=setup_timeout_s) for i in range(count)
    ]


def compile_counts(slots: list[RaySlot], requested: int, vendor: str) -> list[int]:
    """Compile actors per started slot (``share_compilers`` over the cluster's live nodes)."""
    if not slots:
        return []
    nodes = slots[0]._ray.nodes()
    cpus = {n["NodeID"]: float(n.get("Resources", {}).get("CPU", 0)) for n in nodes if n.get("Alive")}
    return share_compilers([(s.node, s.cpus) for s in slots], cpus, requested, vendor)


def share_compilers(
    slots: list[tuple[str, float]], node_cpus: dict[str, float], requested: int, vendor: str
) -> list[int]:
    """Compile actors for each slot (its node, the CPUs it holds). Automatic (``requested`` < 0): the CPUs Ray
    lists on the slot's node beyond those its slots hold, shared between them, less two (the driver, Ray's
    daemons), at most MAX_COMPILERS — and none on a CPU device (the compilers would take the cores being timed).
    ``requested`` >= 0 asks for a number, capped by the CPUs Ray can give them (an actor that cannot be placed
    would leave its items waiting)."""
    counts = []
    for node, _ in slots:
        peers = [cpus for n, cpus in slots if n == node]
        room = int(max(0.0, node_cpus.get(node, 0.0) - sum(peers)) // len(peers))
        wanted = requested if requested >= 0 else (0 if vendor == "cpu" else min(MAX_COMPILERS, room - 2))
        counts.append(max(0, min(wanted, room)))
    return counts
