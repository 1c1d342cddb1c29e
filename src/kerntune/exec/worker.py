"""The worker process: ``python -m kerntune.exec.worker FD_IN FD_OUT``.

It receives ``(function_path, payload)`` messages, calls ``function(state, payload)`` with a state dict
that lives as long as the process (loaded spec, device, cached inputs), and sends back
``("ok", result)``, ``("failed", kind, reason)`` for a CandidateFailed, or ``("error", kind, message)`` for
anything else. Messages travel on dedicated pipes, so anything a kernel or compiler prints on stdout or
stderr cannot corrupt the protocol.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection

from kerntune.errors import CandidateFailed, KerntuneError


def resolve(path: str) -> Callable[[dict[str, object], object], object]:
    module_name, _, attr = path.partition(":")
    function: Callable[[dict[str, object], object], object] = getattr(importlib.import_module(module_name), attr)
    return function


def handle(state: dict[str, object], path: str, payload: object) -> tuple[object, ...]:
    """Run one message: ``("ok", result)``, ``("failed", kind, reason)`` or ``("error", kind, message)``.
    Shared by this process's pipe loop and the Ray executor's actors."""
    try:
        reply: tuple[object, ...] = ("ok", resolve(path)(state, payload))
    except CandidateFailed as exc:
        reply = ("failed", exc.kind, exc.reason)
    except KerntuneError as exc:
        reply = ("error", type(exc).__name__, str(exc))
    except BaseException as exc:
        traceback.print_exc()  # the whole traceback goes to the worker log; the reply stays one line
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
        reply = ("error", type(exc).__name__, f"{exc}{where}")
    sys.stdout.flush()
    sys.stderr.flush()
    return reply


def serve(inbox: Connection, outbox: Connection) -> None:
    state: dict[str, object] = {}
    while True:
        try:
            path, payload = inbox.recv()
        except (EOFError, OSError):
            return  # the tuner went away: nothing left to do
        outbox.send(handle(state, path, payload))


def _exit_with_parent() -> None:
    """Exit when the tuner dies (kill -9 included): an orphaned worker would hold the device."""
    parent = int(os.environ.get("KERNTUNE_PARENT_PID", "0")) or os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="kerntune-parent-watch", daemon=True).start()


NICE = 10
"""Compile workers yield the CPU to the timing worker (a busy host delays launches inside short samples)."""


def yield_cpu() -> None:
    """A compile-ahead worker (KERNTUNE_WORKER_NICE set) lowers its priority: it yields the cores to the timing
    process, whose host-side launch latency enters short samples. Called by this process and by Ray's compile
    actors."""
    nice = int(os.environ.get("KERNTUNE_WORKER_NICE", "0") or 0)
    if nice:
        os.nice(nice)


def main(argv: list[str]) -> None:
    _exit_with_parent()
    yield_cpu()
    inbox = Connection(int(argv[1]), writable=False)
    outbox = Connection(int(argv[2]), readable=False)
    serve(inbox, outbox)


if __name__ == "__main__":
    main(sys.argv)
