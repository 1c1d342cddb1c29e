"""Where a run times: the placement's checks and the visible-GPU list the local pool pins its workers to."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerntune.errors import KerntuneError, UsageError
from kerntune.exec.ray_slots import share_compilers
from kerntune.exec.slots import local_slots, visible_gpus
from kerntune.tune.pool import Placement


def test_placement_refuses_unknown_executors_and_a_stray_address() -> None:
    with pytest.raises(UsageError, match="unknown executor 'slurm'"):
        Placement(executor="slurm")
    with pytest.raises(UsageError, match="--address names a Ray cluster"):
        Placement(workers=2, address="ray://head:10001")
    assert Placement(workers=2, executor="ray", address="auto").address == "auto"


def test_visible_gpus_follow_the_pinning_variables() -> None:
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2, 5"}) == ["2", "5"]
    assert visible_gpus({"HIP_VISIBLE_DEVICES": "1"}) == ["1"]


def test_local_pool_refuses_zero_workers(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="at least 1"):
        local_slots(("x:y", {}), 0, log_dir=tmp_path, lock_dir=tmp_path, setup_timeout_s=1.0, tag="t")


def test_a_gpu_held_by_another_run_is_refused_by_name(tmp_path: Path) -> None:
    from filelock import FileLock

    from kerntune.exec.slots import LocalSlot

    other = FileLock(str(tmp_path / "gpu-7.lock"))
    other.acquire()
    try:
        slot = LocalSlot(("x:y", {}), device="7", log_path=tmp_path / "w.log", lock_dir=tmp_path, setup_timeout_s=1)
        with pytest.raises(UsageError, match="GPU 7 is held by another kerntune process"):
            slot.start()
    finally:
        other.release()
    # Once free, the slot takes the lock; a setup that fails gives it back.
    slot = LocalSlot(
        ("kerntune.no_such_module:setup", {}),
        device="7",
        log_path=tmp_path / "w.log",
        lock_dir=tmp_path,
        setup_timeout_s=30,
    )
    with pytest.raises(KerntuneError):
        slot.start()
    assert FileLock(str(tmp_path / "gpu-7.lock")).acquire(timeout=0.1)


def test_a_ray_address_nobody_answers_at_is_refused_at_once() -> None:
    from kerntune.exec.ray_slots import _reachable

    with pytest.raises(UsageError, match=r"cannot reach the Ray cluster at ray://127\.0\.0\.1:1 "):
        _reachable("ray://127.0.0.1:1")  # port 1: refused on any machine that runs no service there
    _reachable("auto")  # names Ray resolves itself are left to it


def test_ray_compile_actors_share_their_nodes_cpus() -> None:
    nodes = {"a": 16.0, "b": 32.0}
    gpu_slots = [("a", 0.0), ("b", 0.0), ("b", 0.0)]  # one GPU actor on a, two on b (GPU actors hold no CPU)
    assert share_compilers(gpu_slots, nodes, -1, "nvidia") == [14, 14, 14]  # a: 16 - 2; b: 32 / 2 - 2
    assert share_compilers([("b", 0.0)], nodes, -1, "nvidia") == [16]  # at most 16 per slot
    assert share_compilers(gpu_slots, nodes, 20, "nvidia") == [16, 16, 16]  # asked for: capped by what Ray can place
    assert share_compilers(gpu_slots, nodes, 3, "nvidia") == [3, 3, 3]
    cpu_slots = [("a", 1.0), ("a", 1.0)]  # CPU devices: each slot holds a CPU
    assert share_compilers(cpu_slots, nodes, -1, "cpu") == [0, 0]  # automatic: none beside a CPU device
    assert share_compilers(cpu_slots, {"a": 3.0}, 4, "cpu") == [0, 0]  # 1 CPU left for 2 slots: none placeable
    assert share_compilers([("gone", 0.0)], nodes, -1, "nvidia") == [0]  # a node no longer listed: none
