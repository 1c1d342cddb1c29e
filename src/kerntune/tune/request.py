"""What a caller asks of a run (``TuneRequest``) and how the run reports back while it goes (``Progress``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kerntune.model import Budget, Run
from kerntune.model.time_plan import TimePlan
from kerntune.tune.pool import Placement


@dataclass(frozen=True)
class TuneRequest:
    """Everything ``kerntune tune`` was asked to do (a new run), or the id of a run to resume."""

    spec: str = ""
    shapes: Sequence[Mapping[str, str]] = ()
    """Overrides as text (``{"M": "4096"}``), each merged over the spec's first shape."""
    dtype: str | None = None
    device: str = ""
    strategy: str = "auto"
    budget: Budget = field(default_factory=Budget)
    seed: int = 0
    resume: str | None = None
    retry_failed: bool = False
    """Run configs again that the ledger says failed before for the same source, shape and Target."""
    target_ms: float | None = None
    """Stop a shape's search once a config's full measurement is at or under this median."""
    shapes_from: str = ""
    shapes_top: int = 0
    """With ``shapes_from``: tune only the corpus's N shapes with the most device time (0: all)."""
    """A corpus the live runtime recorded (KERNTUNE_RECORD_UNTUNED): its distinct shapes of this problem."""
    placement: Placement = field(default_factory=Placement)
    """Where candidates are timed: one worker, a local pool (one per GPU), or Ray actors."""


class Progress(Protocol):
    def planned(self, run: Run, total: int, plan: TimePlan) -> None:
        """Before the first evaluation: the evaluations planned and the time plan (the estimate)."""

    def finished(self, label: str, status: str, detail: str) -> None: ...


class Silent:
    """A Progress that says nothing (library callers that pass none)."""

    def planned(self, run: Run, total: int, plan: TimePlan) -> None:
        pass

    def finished(self, label: str, status: str, detail: str) -> None:
        pass
