"""Which of the processes on a GPU are kerntune's own, so a tenant count does not call them other tenants.

NVML lists every process holding a compute context on the device; a tune's compile-ahead workers hold one too
(Triton asks the device for its target), and counting them flagged 11 of 12 measurements of an H200 tune as
"another process used the GPU". NVML's process ids cannot be matched to ours inside a container (they are the
host's), so the count of our own is taken from ``/proc`` instead: the command that started the measuring
process (its parent where that is a kerntune process, else itself) and every descendant, counting those with
``/dev/nvidia-uvm`` open — what a CUDA context opens, and NVML alone does not.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def _parents(proc: Path) -> dict[int, int]:
    """Each process's parent, from ``/proc/PID/stat`` (the field after the parenthesised command name)."""
    found: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            found[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):  # a process that ended while read
            continue
    return found


def family(root: int, proc: Path = PROC) -> set[int]:
    """``root`` and its descendants."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents(proc).items():
        children.setdefault(parent, []).append(pid)
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def holds_cuda(pid: int, proc: Path = PROC) -> bool:
    """The process has ``/dev/nvidia-uvm`` open: a CUDA context, not an NVML handle alone."""
    try:
        fds = list((proc / str(pid) / "fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(fd).startswith("/dev/nvidia-uvm"):
                return True
        except OSError:
            continue
    return False


def command_root(pid: int | None = None, proc: Path = PROC) -> int:
    """The process whose family is kerntune's: the parent of ``pid`` (default: this process) where the parent is a
    kerntune command (a tuner, an ``ab``, a lab job), else ``pid`` itself (a shell's other children are not ours)."""
    pid = os.getpid() if pid is None else pid
    parent = _parents(proc).get(pid)
    if parent is None:
        return pid
    try:
        command = (proc / str(parent) / "cmdline").read_bytes()
    except OSError:
        return pid
    return parent if b"kerntune" in command else pid


def own_gpu_processes(pid: int | None = None, proc: Path = PROC) -> int | None:
    """How many of the kerntune command's processes (that of ``pid``, default this process) hold a CUDA context;
    None where ``/proc`` cannot say."""
    if not proc.is_dir():
        return None
    try:
        return sum(1 for member in family(command_root(pid, proc), proc) if holds_cuda(member, proc))
    except OSError:
        return None
