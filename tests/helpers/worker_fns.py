"""Functions a test worker runs by dotted path (a null workload: no device, no kernel)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from kerntune.errors import CandidateFailed


def setup(state: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    state["setups"] = state.get("setups", 0) + 1
    return {"pid": os.getpid()}


def echo(state: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    return {"payload": payload, "pid": os.getpid()}


def fail(state: dict[str, Any], payload: dict[str, Any]) -> None:
    raise CandidateFailed("compile", "planted failure")


def boom(state: dict[str, Any], payload: dict[str, Any]) -> None:
    raise ValueError("unexpected")


def segfault(state: dict[str, Any], payload: dict[str, Any]) -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def hang(state: dict[str, Any], payload: dict[str, Any]) -> None:
    while True:
        time.sleep(1)


def noisy(state: dict[str, Any], payload: dict[str, Any]) -> str:
    print("stdout chatter that must not corrupt the protocol")
    return "clean"


def setups(state: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """How often this process was set up (0: a process nobody set up) and its pid."""
    return {"setups": state.get("setups", 0), "pid": os.getpid()}
