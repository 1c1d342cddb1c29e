"""``Candidate``, ``Budget`` and ``Run``: what the store records about a tuning session."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from kerntune.errors import UsageError
from kerntune.model.json_types import JSONValue
from kerntune.model.measurement import FailureKind, Measurement, Verdict
from kerntune.model.point import Config, Shape
from kerntune.model.roofline import CeilingsRecord, CostRecord
from kerntune.model.target import Target

MAX_BUDGET = 1_000_000_000
"""The largest number a --budget term takes (evaluations, or seconds, minutes or hours)."""

CandidateStatus = Literal["pending", "ok", "failed", "pruned", "duplicate"]
"""``pruned``: its compiled resources rule it out (cannot launch, or under the minimum occupancy), never run;
``duplicate``: the same binaries and grids as a config already timed at this shape, so not timed again."""
CandidateRole = Literal["search", "baseline", "screen"]
"""``screen``: a short measurement in a race, used only to decide which configs get the full protocol."""


@dataclass(frozen=True)
class Candidate:
    """A config (or a baseline implementation) compiled for a Target and run on one shape."""

    shape: Shape
    config: Config
    role: CandidateRole = "search"
    label: str = ""
    status: CandidateStatus = "pending"
    failure: FailureKind | None = None
    reason: str = ""
    compile_s: float | None = None
    binary_hash: str | None = None
    resources: Mapping[str, object] = field(default_factory=dict)
    measurement: Measurement | None = None
    """The search-time measurement (in the tuner's long-lived worker)."""
    confirmed: Measurement | None = None
    """Samples pooled over the confirmation rounds (fresh processes, interleaved), when it was a finalist."""
    verdict: Verdict | None = None
    id: int | None = None
    gate_s: float | None = None
    """Seconds spent on the correctness gate (all seeds)."""
    measure_s: float | None = None
    """Seconds spent sampling, warm-up included."""

    @property
    def best_measurement(self) -> Measurement | None:
        """The confirmed measurement where there is one, else the search-time one."""
        return self.confirmed or self.measurement

    @property
    def name(self) -> str:
        return self.label or self.config.key


RunStatus = Literal["running", "done", "interrupted", "failed"]


@dataclass(frozen=True)
class Budget:
    """Search limits: evaluations (per shape), seconds (whole run) and seconds per shape (each shape's search,
    counted from its first proposal; a resumed shape starts its clock again). None means unlimited."""

    evaluations: int | None = None
    seconds: float | None = None
    shape_seconds: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {"evaluations": self.evaluations, "seconds": self.seconds, "shape_seconds": self.shape_seconds}

    @classmethod
    def parse(cls, values: Sequence[str]) -> Budget:
        """``100`` evaluations (per shape), ``90s`` / ``5m`` / ``1h`` seconds (whole run), ``45s/shape`` seconds for
        each shape's search; any of them may be combined."""
        evaluations: int | None = None
        seconds: float | None = None
        shape_seconds: float | None = None
        for raw in values:
            for text in filter(None, (t.strip() for t in raw.split(","))):
                match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(?:(s|m|h)(/shape)?)?", text)
                if not match:
                    raise UsageError(
                        f"--budget {text!r}: give an evaluation count (100), a time for the whole tuning "
                        "(90s, 5m, 1h) or a time per shape (45s/shape)"
                    )
                number, unit = float(match.group(1)), match.group(2)
                if number > MAX_BUDGET:  # 400 nines is an infinite float: no count, and not JSON
                    raise UsageError(f"--budget {text[:40]!r}: too large; give at most {MAX_BUDGET:,}")
                if unit is None:
                    if number < 1 or number != int(number):
                        raise UsageError(f"--budget {text!r}: an evaluation count must be a positive integer")
                    evaluations = int(number)
                    continue
                limit = number * {"s": 1, "m": 60, "h": 3600}[unit]
                if limit <= 0:
                    raise UsageError(f"--budget {text!r}: a time budget must be positive")
                if match.group(3):
                    shape_seconds = limit
                else:
                    seconds = limit
        return cls(evaluations, seconds, shape_seconds)


class PlacementRecord(TypedDict):
    """Where a run's workers ran: how many, on which executor, at which address (Ray)."""

    workers: int | None
    executor: str
    address: str


class RunOptions(TypedDict, total=False):
    """What a run keeps beside its plan: enough to resume it, report it against the roofline, and deploy it."""

    device: str
    retry_failed: bool
    kernel_hash: str | None
    serves: list[str]
    """Library operators its winners are served in place of."""
    placement: PlacementRecord
    target_ms: float | None
    costs: dict[str, CostRecord]
    """By shape key."""
    ceilings: CeilingsRecord
    valid_configs: dict[str, int]
    """By shape key: the configs the space holds there."""
    shape_slots: dict[str, str]
    """By shape key: the worker slot that tuned it."""
    phases: dict[str, float]
    """By ``slot:phase``: seconds spent."""
    imported_from: str
    objective: JSONValue
    tune_params: JSONValue
    tune_params_keys: list[str]


@dataclass(frozen=True)
class Run:
    """One tuning session in the store. Resumable: its options are enough to redo the plan."""

    id: str
    problem: str
    spec_path: str
    spec_hash: str
    target: Target
    strategy: str
    budget: Budget
    shapes: tuple[Shape, ...]
    dtype: str
    seed: int
    status: RunStatus = "running"
    stop_reason: str = ""
    created: str = ""
    elapsed_s: float = 0.0
    options: RunOptions = field(default_factory=lambda: RunOptions())
