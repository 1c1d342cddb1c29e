"""kerntune's own processes with a CUDA context, read from a /proc tree written here as the kernel lays it out:
``PID/stat`` (the parent after the command name, which may hold spaces and parentheses), ``PID/cmdline`` and
``PID/fd`` links to the device files a process holds open."""

from __future__ import annotations

import os
from pathlib import Path

from kerntune.devices.own_processes import command_root, family, holds_cuda, own_gpu_processes


def _process(proc: Path, pid: int, parent: int, command: bytes, opened: list[str]) -> None:
    folder = proc / str(pid)
    (folder / "fd").mkdir(parents=True)
    (folder / "stat").write_text(f"{pid} (py thon) (x)) S {parent} {pid} {pid} 0 -1\n")
    (folder / "cmdline").write_bytes(command)
    for i, target in enumerate(opened):
        os.symlink(target, folder / "fd" / str(i))


def _tree(proc: Path) -> None:
    _process(proc, 1, 0, b"init", [])
    _process(proc, 10, 1, b"bash", [])
    _process(proc, 20, 10, b"python\0-m\0kerntune\0tune", ["/dev/nvidiactl", "/dev/nvidia0"])  # NVML only
    _process(proc, 21, 20, b"python\0worker", ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"])  # measures
    _process(proc, 22, 20, b"python\0compile", ["/dev/nvidia-uvm", "/tmp/x"])  # a compile worker's context
    _process(proc, 23, 22, b"ptxas", [])
    _process(proc, 30, 10, b"python\0train.py", ["/dev/nvidia-uvm"])  # the user's other job, from the same shell


def test_the_family_is_the_kerntune_command_and_its_descendants(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert family(20, tmp_path) == {20, 21, 22, 23}
    assert command_root(21, tmp_path) == 20  # the worker's parent is a kerntune command
    assert command_root(20, tmp_path) == 20  # its own parent is a shell: a shell's other children are not ours


def test_only_processes_with_a_cuda_context_count(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert [holds_cuda(p, tmp_path) for p in (20, 21, 22, 23, 30)] == [False, True, True, False, True]
    assert own_gpu_processes(21, tmp_path) == 2  # the worker and the compile worker; not train.py
    assert own_gpu_processes(21, tmp_path / "missing") is None
