"""A Ray slot's process handling on a local Ray cluster, with a null workload (no device, no kernel): a hang, a
restart (the "fresh process" a confirmation round asks for) and a crash each leave a new process that was set up
— never a setup that reached the dying process, whose successor would then run messages with no state."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kerntune.exec.ray_slots import RaySlot, connect

ray = pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[3]
FNS = "tests.helpers.worker_fns"


@pytest.fixture(scope="module")
def slot() -> Iterator[RaySlot]:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    connect("")  # a local cluster; its workers inherit PYTHONPATH and import the null workload
    one = RaySlot(ray, "ray actor 0", (f"{FNS}:setup", {}), options={"num_cpus": 1}, setup_timeout_s=120)
    one.start()
    yield one
    one.release()
    ray.shutdown()


def _process(slot: RaySlot) -> tuple[int, int]:
    reply = slot.call(f"{FNS}:setups", {}, 60)
    assert reply.status == "ok", reply
    return reply.value["pid"], reply.value["setups"]


def test_a_restart_is_a_new_process_set_up_once(slot: RaySlot) -> None:
    pids = [_process(slot)[0]]
    for _ in range(3):  # ray.kill is asynchronous: a setup sent at once could reach the dying process
        slot.restart()
        pid, setups = _process(slot)
        assert setups == 1 and pid not in pids
        pids.append(pid)


def test_a_hang_is_killed_and_the_next_process_is_set_up(slot: RaySlot) -> None:
    before = _process(slot)[0]
    hang = slot.call(f"{FNS}:hang", {}, 2.0)
    assert (hang.status, hang.kind, hang.restarted) == ("failed", "hang", True)
    pid, setups = _process(slot)
    assert setups == 1 and pid != before


def test_a_candidate_that_kills_its_actor_twice_is_a_crash(slot: RaySlot) -> None:
    crash = slot.call(f"{FNS}:segfault", {}, 60)
    assert crash.status == "failed" and crash.kind == "crash" and "died 2 times" in crash.reason
    assert _process(slot)[1] == 1  # and the slot goes on, set up
