"""A worker subprocess with crash and hang isolation.

The tuner talks to one worker per device. A call that does not answer within its timeout is a hang: the
worker's whole process group is killed and a fresh worker is started (and set up again) for the next call.
A worker that dies (segfault, abort, an out-of-memory kill) is reported with its signal and the tail of its
log, and restarted the same way. Nothing a candidate does can take the tuner down with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from kerntune.errors import BackendUnavailable, KerntuneError, SpecError


@dataclass(frozen=True)
class Outcome:
    """What one call produced: a result, a candidate failure (kind + reason), or a worker error."""

    status: Literal["ok", "failed", "error"]
    value: Any = None
    kind: str = ""
    reason: str = ""
    restarted: bool = False
    """True when the worker was replaced after this call (it hung or died): nothing of it is reused."""


def _signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class Stoppable(Protocol):
    def stop(self) -> None: ...


def end(worker: Stoppable) -> None:
    """End a worker for good: ``release`` where it holds something beyond its process (a GPU's lock, a Ray
    actor), else ``stop``."""
    finish: Callable[[], None] = getattr(worker, "release", worker.stop)
    finish()


class Worker:
    """One subprocess running ``kerntune.exec.worker``; ``setup`` is replayed after every restart."""

    def __init__(
        self,
        setup: tuple[str, Mapping[str, object]],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        setup_timeout_s: float = 600.0,
    ) -> None:
        self._setup = setup
        self._log_path = log_path
        self._env = dict(os.environ if env is None else env)
        self._setup_timeout_s = setup_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._to: Connection | None = None
        self._from: Connection | None = None
        self._log: IO[bytes] | None = None
        self.restarts = 0
        self.setup_result: Any = None

    name = "worker"

    def fresh(self, log_path: Path) -> Worker:
        """An unstarted worker on the same device (same setup and environment): a fresh process."""
        return Worker(self._setup, log_path=log_path, env=self._env, setup_timeout_s=self._setup_timeout_s)

    # ------------------------------------------------------------------------------------ lifecycle
    def start(self) -> Any:
        """Start the process and run setup; raise a KerntuneError if setup fails (the run cannot go on)."""
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self._log_path, "ab")  # noqa: SIM115 - lives as long as the worker
        child_in, parent_out = os.pipe()
        parent_in, child_out = os.pipe()
        # KERNTUNE_DISPATCH=off: code measured here never reads a deployed table (it would measure itself).
        env = {
            **self._env,
            "PYTHONUNBUFFERED": "1",
            "KERNTUNE_PARENT_PID": str(os.getpid()),
            "KERNTUNE_DISPATCH": "off",
        }
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "kerntune.exec.worker", str(child_in), str(child_out)],
            pass_fds=(child_in, child_out),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            env=env,
            start_new_session=True,  # its own process group: a hang is killed with all its children
        )
        os.close(child_in)
        os.close(child_out)
        self._to = Connection(parent_out, readable=False)
        self._from = Connection(parent_in, writable=False)
        path, payload = self._setup
        outcome = self.call(path, payload, self._setup_timeout_s, restart=False)
        if outcome.status != "ok":
            self.stop()
            error = {"SpecError": SpecError}.get(outcome.kind, BackendUnavailable)
            raise error(outcome.reason.splitlines()[0] if outcome.reason else "the worker failed to start")
        self.setup_result = outcome.value
        return outcome.value

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        for conn in (self._to, self._from):
            if conn is not None:
                conn.close()
        if self._log is not None:
            self._log.close()
        self._proc, self._to, self._from, self._log = None, None, None, None

    def restart(self) -> None:
        """Kill the worker and start a fresh one (set up again): after a crash the device context may be
        poisoned (an illegal address poisons a CUDA context for good), so nothing of it is reused."""
        self.stop()
        self.restarts += 1
        self.start()

    def _log_tail(self, since: int, lines: int = 6) -> str:
        try:
            with open(self._log_path, "rb") as f:
                f.seek(since)
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail)

    # ----------------------------------------------------------------------------------------- calls
    def call(self, path: str, payload: Mapping[str, object], timeout_s: float, *, restart: bool = True) -> Outcome:
        """Run ``path(state, payload)`` in the worker. A hang or a death restarts the worker when
        ``restart`` is true and is returned as a failed Outcome of kind ``hang`` or ``crash``."""
        if self._proc is None or self._to is None or self._from is None:
            raise KerntuneError("the worker is not running: start() it first")
        log_start = self._log_path.stat().st_size if self._log_path.exists() else 0
        try:
            self._to.send((path, payload))
        except (BrokenPipeError, OSError):
            return self._died(log_start, restart)
        deadline = time.monotonic() + timeout_s
        while True:
            if self._from.poll(0.2):
                try:
                    reply = self._from.recv()
                except (EOFError, OSError):
                    return self._died(log_start, restart)
                return self._outcome(reply)
            if self._proc.poll() is not None:
                if self._from.poll(0):
                    continue
                return self._died(log_start, restart)
            if time.monotonic() > deadline:
                self.stop()
                if restart:
                    self.restarts += 1
                    self.start()
                return Outcome(
                    "failed", kind="hang", reason=f"no answer within {timeout_s:g} s; worker killed", restarted=restart
                )

    @staticmethod
    def _outcome(reply: tuple[object, ...]) -> Outcome:
        if reply[0] == "ok":
            return Outcome("ok", value=reply[1])
        if reply[0] == "failed":
            return Outcome("failed", kind=str(reply[1]), reason=str(reply[2]))
        return Outcome("error", kind=str(reply[1]), reason=str(reply[2]))

    def _died(self, log_start: int, restart: bool) -> Outcome:
        assert self._proc is not None
        code = self._proc.wait()
        tail = self._log_tail(log_start)
        reason = f"worker died with {_signal_name(code)}" + (f": {tail}" if tail else "")
        self.stop()
        if restart:
            self.restarts += 1
            self.start()
        return Outcome("failed", kind="crash", reason=reason, restarted=restart)
