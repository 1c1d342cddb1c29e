"""Speed floors: the winners' times of a run, kept per arch in a plain ``key = value`` file with a comment
header, and checked against later runs (the speed-gate of the hipfire seed).

A check fails when a winner is slower than its floor beyond the band (default 5%: speed below
floor × 0.95), and labels FAST when it is faster beyond the fast band (default 2%: speed above floor × 1.02).

What is compared, best first: the winner's time over its reference's (the library baseline, or the default
config) where confirmation timed the two interleaved launch by launch — a ``KEY@ratio:REFERENCE`` line, which
carries no clock or power state from the day it was recorded, since both sides of it ran under the same one;
else the winner's confirmed median (search-time otherwise), in milliseconds, which does. A floor file holds both
where the run had both, and a check uses the ratio when the floor and the run both have it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from kerntune.errors import UsageError
from kerntune.report.summary import RunReport

Floors = dict[str, float]


RATIO = "@ratio:"


@dataclass(frozen=True)
class FloorCheck:
    key: str
    floor_ms: float | None
    measured_ms: float | None
    verdict: str
    """PASS, FAST, FAIL, NO-FLOOR (the run has a result the file lacks) or NOT-MEASURED (the reverse)."""
    unit: str = "ms"
    """What floor and measured are: ``ms`` (medians), or ``ratio to REFERENCE`` (interleaved, lower is faster);
    ``floor_ms``/``measured_ms`` then hold the ratios."""


def floor_key(problem: str, dtype: str, shape_key: str) -> str:
    return f"{problem}|{dtype}|{shape_key}"


def run_conditions(report: RunReport) -> str:
    """The conditions the run's winners were timed under, as the floor file's ``# conditions:`` line."""
    seen = set()
    for shape in report.shapes:
        best = shape.winner.best_measurement if shape.winner else None
        if best is not None:
            seen.add(best.conditions.key_text())
    return "; ".join(sorted(seen))


def run_floors(report: RunReport) -> Floors:
    """key → the winner's (confirmed) median in ms, for every shape of the run that has a timed winner; and
    ``key@ratio:REFERENCE`` → its interleaved ratio to the reference, where confirmation timed the two beside each
    other (the reference being another candidate than the winner)."""
    floors: Floors = {}
    for shape in report.shapes:
        best = shape.winner.best_measurement if shape.winner else None
        if best is None or shape.winner is None:
            continue
        key = floor_key(report.run.problem, report.run.dtype, shape.shape.key)
        floors[key] = best.median_ms
        ratio, ref = shape.interleaved.get(shape.winner.id or -1), shape.reference
        if ratio is not None and ref is not None and ref.id != shape.winner.id:
            floors[f"{key}{RATIO}{ref.label or ref.role}"] = ratio.ratio
    return floors


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def write_floors(path: Path, report: RunReport, merge: bool = True) -> Floors:
    """Write (merging over an existing file of the same arch) the run's winners, atomically."""
    floors = read_floors(path, report.run.target.arch) if merge and path.exists() else {}
    floors.update(run_floors(report))
    if not floors:
        raise UsageError(f"tuning run {report.run.id} has no timed winner to record as a floor")
    header = [
        "# kerntune speed floors: median milliseconds per launch of each shape's winner, and (KEY@ratio:REF) its",
        "# time over the reference's, timed interleaved (lower is faster in both)",
        f"# arch: {report.run.target.arch}",
        f"# device: {report.run.target.label}",
        f"# recorded: {datetime.now(timezone.utc).isoformat(timespec='seconds')} from run {report.run.id}",
        f"# commit: {_commit()}",
        f"# conditions: {run_conditions(report)}",
    ]
    body = [f"{key} = {value:.6g}" for key, value in sorted(floors.items())]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:  # temp file + rename: a reader never sees half a file
        f.write("\n".join(header + body) + "\n")
    os.replace(tmp, path)
    return floors


def read_floors(path: Path, arch: str, conditions: str | None = None) -> Floors:
    """Parse a floor file; refuse one recorded on another arch (floors never transfer between chips) or, when
    ``conditions`` is given, under other measurement conditions (a cold floor says nothing of a warm time)."""
    if not path.is_file():
        raise UsageError(f"floor file {str(path)!r} does not exist: record one with `kerntune floor record TUNING_RUN`")
    floors: Floors = {}
    file_arch = None
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if line.startswith("# arch:"):
            file_arch = line.split(":", 1)[1].strip()
        if line.startswith("# conditions:") and conditions is not None:
            recorded = line.split(":", 1)[1].strip()
            if recorded and conditions and recorded != conditions:
                raise UsageError(
                    f"{path} was recorded under {recorded!r}, this tuning run measured under "
                    f"{conditions!r}: deltas are only computed under equal conditions; "
                    "re-record the floors or measure as they were"
                )
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.rpartition("=")
        try:
            floors[key.strip()] = float(value)
        except ValueError:
            raise UsageError(
                f"{path}:{number}: expected `key = milliseconds` (or `key@ratio:REF = ratio`), got {line!r}"
            ) from None
        if not sep:
            raise UsageError(
                f"{path}:{number}: expected `key = milliseconds` (or `key@ratio:REF = ratio`), got {line!r}"
            )
    if file_arch is None:
        raise UsageError(f"{path} has no `# arch:` header line: re-record it with `kerntune floor record`")
    if file_arch != arch:
        raise UsageError(f"{path} holds floors for {file_arch}, the tuning run is on {arch}: floors are per arch")
    return floors


def check_floors(floors: Floors, report: RunReport, band: float = 0.05, fast_band: float = 0.02) -> list[FloorCheck]:
    """One check per shape key: by the interleaved ratio where the floor and the run both have it for the same
    reference, else by the median in ms."""
    measured = run_floors(report)
    checks = []
    for key in sorted(k for k in set(floors) | set(measured) if RATIO not in k):
        unit, floor, now = "ms", floors.get(key), measured.get(key)
        for ratio_key in sorted(k for k in floors if k.startswith(key + RATIO)):
            if ratio_key in measured:
                unit, floor, now = f"ratio to {ratio_key.split(RATIO, 1)[1]}", floors[ratio_key], measured[ratio_key]
        if floor is None:
            verdict = "NO-FLOOR"
        elif now is None:
            verdict = "NOT-MEASURED"
        elif floor / now < 1 - band:  # speed ratio (higher is faster) below the band
            verdict = "FAIL"
        elif floor / now > 1 + fast_band:
            verdict = "FAST"
        else:
            verdict = "PASS"
        checks.append(FloorCheck(key, floor, now, verdict, unit))
    return checks
