"""One exception class per failure kind. Every message says what was wrong and what to do.

The CLI turns a ``KerntuneError`` into a one-line message and exit code 2 (usage or environment error);
a failed claim (gate, regression) is exit code 1 and is not an exception.
"""

from __future__ import annotations


class KerntuneError(Exception):
    """Base class: a problem the user can act on (exit code 2, no traceback)."""

    exit_code = 2


class SpecError(KerntuneError):
    """The spec file is missing, does not load, or describes an unusable problem."""


class UsageError(KerntuneError):
    """A command-line argument is wrong (unknown shape field, bad budget, ...)."""


class BackendUnavailable(KerntuneError):
    """The backend or device the problem needs is not installed or not present."""


class StoreError(KerntuneError):
    """The store cannot be opened, or a run asked for does not exist."""


class RunNotFound(StoreError):
    """No run matches the id or prefix asked for (a web request answers 404)."""


class CandidateFailed(Exception):
    """Raised inside a worker when one candidate fails; carries the failure kind and reason.

    Not a KerntuneError: a failed candidate is a result of the run, recorded in the store, never fatal.
    """

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason
