"""What a run found, per shape: the gated winner, the baselines timed beside it, the slowest and default
configs, and every failed candidate with its reason. Built from the store, so ``tune`` and ``show`` agree.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from kerntune.measure.second_timer import PROFILER, SHORT, TimerCheck, combine
from kerntune.measure.speed_of_light import speed_of_light
from kerntune.measure.stats import RatioEstimate, ratio_ci
from kerntune.model import Candidate, Run, Shape
from kerntune.model.roofline import CeilingsRecord, CostRecord, SpeedOfLight
from kerntune.store import Store


@dataclass(frozen=True)
class ShapeReport:
    shape: Shape
    winner: Candidate | None
    baselines: list[Candidate]
    slowest: Candidate | None
    failed: list[Candidate]
    counts: dict[str, int]
    timing_claimed: bool
    pending: int = 0
    finalists: list[Candidate] = field(default_factory=list)
    """Candidates re-timed in fresh processes (configs and baselines), fastest first: by interleaved ratio to the
    reference where confirmation paired them, else by confirmed median."""
    pruned_by_constraint: int = 0
    """Configs the space's constraints excluded before the search (never compiled)."""
    valid_configs: int | None = None
    """Configs the constraints left at this shape (None: a run from before it was recorded)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Time split: ``compile`` (summed over candidates; compile workers run in parallel), ``gate`` and ``measure``
    (in the timing worker), and ``screened``/``timed`` counts of measurements by fidelity."""

    @property
    def disturbed(self) -> dict[str, int]:
        """Of this shape's timed measurements (search and confirmation): how many ran throttled, and how many
        while another process was on the device."""
        seen = [m for c in self.all_candidates for m in (c.measurement, c.confirmed) if m is not None]
        return {
            "measurements": len(seen),
            "throttled": sum(m.conditions.throttled for m in seen),
            "other_tenant": sum(m.conditions.other_tenant for m in seen),
        }

    @property
    def outcome_counts(self) -> dict[str, int]:
        """Configs (not measurements) by what became of them: timed, failed, pruned, duplicate."""
        searched: dict[str, str] = {}
        for c in self.all_candidates:
            if c.role != "baseline":
                best = searched.get(c.config.key)
                if best is None or _STATUS_ORDER[c.status] < _STATUS_ORDER[best]:
                    searched[c.config.key] = c.status
        ok = "timed" if self.timing_claimed else "gated"
        counts = Counter(ok if v == "ok" else v for v in searched.values())
        return {"pruned before compiling": self.pruned_by_constraint, **dict(counts)}

    @property
    def reached(self) -> int:
        """Distinct configs of the space the search got to at this shape, whatever became of them (timed, failed,
        pruned after compiling, a duplicate), and the baselines' configs that ran (a spec's default counts once;
        one its constraints refuse at this shape is not a point of the space). Never more than were reached."""
        return len(
            {
                c.config.key
                for c in self.all_candidates
                if c.config.key and c.status != "pending" and (c.role != "baseline" or c.status == "ok")
            }
        )

    @property
    def coverage(self) -> str:
        """``"N of M valid configs reached"``, or "" where the valid count was not recorded. A search cut by its
        budget has covered part of the space: its winner is the best of what it reached, which this says."""
        if self.valid_configs is None:
            return ""
        return f"{min(self.reached, self.valid_configs)} of {self.valid_configs} valid configs reached"

    all_candidates: list[Candidate] = field(default_factory=list)
    cost: CostRecord | None = None
    """The spec's cost model at this shape (flops, bytes), when it has one."""
    ceilings: CeilingsRecord | None = None
    """The device's calibration recorded with the run, when there was one."""
    second_timer: dict[int, TimerCheck] = field(default_factory=dict)
    """By candidate id: its interleaved ratio to the reference timed again by the device's second timer
    (``measure.second_timer``), over the rounds that have it: ``timer``, ``ratio`` and ``events_ratio`` (geometric
    means over those rounds), ``rounds``, and whether the two ``agree`` within 1%."""
    interleaved: dict[int, RatioEstimate] = field(default_factory=dict)
    """By candidate id: its time over the reference's, timed interleaved in each confirmation round (geometric
    mean over rounds, Student-t interval; the reference itself at 1). Empty when confirmation did not pair."""
    reference: Candidate | None = None
    """What the confirmation rounds timed every finalist beside (``kerntune.tune.confirm.reference``)."""

    def runners_up(self, count: int = 5) -> list[Candidate]:
        """The fastest ``count`` searched configs after the winner by their full-protocol search medians
        (confirmed or not): where a reproducibility oracle or a user looks for what came close."""
        done = [
            c
            for c in self.all_candidates
            if c.role == "search"
            and c.status == "ok"
            and c.measurement
            and (self.winner is None or c.id != self.winner.id)
        ]
        return sorted(done, key=lambda c: c.measurement.median_ms if c.measurement else 0.0)[:count]

    def speed_of_light(self, c: Candidate | None) -> SpeedOfLight | None:
        """The candidate's best time against the calibrated roofline (None without cost or calibration)."""
        m = c.best_measurement if c is not None else None
        if m is None or not self.cost or not self.ceilings:
            return None
        return speed_of_light(self.cost, m.median_ms, self.ceilings)

    def headline(self, c: Candidate | None) -> tuple[float, str] | None:
        """The candidate's time over the reference's as the report leads with it, and by which timer: per-dispatch
        device time (CUPTI) where the second timer measured the candidate so, else the CUDA events' (or the
        device's own) interleaved ratio; the reference itself is 1 on every timer. Hazard: events bracket whatever
        the device did between them (its own start of the kernel and its drain before the end event included), so
        at a 15 µs kernel a few µs pull a ratio toward 1 (the claims check on the H200 read 5.11 by events where
        kernel records read 5.89)."""
        if c is None or c.id is None:
            return None
        if c is self.reference:
            return 1.0, "reference"
        checked = self.second_timer.get(c.id) or {}
        if checked.get("timer") == PROFILER and "ratio" in checked:
            return float(checked["ratio"]), SHORT[PROFILER]
        r = self.interleaved.get(c.id)
        return (r.ratio, "events") if r is not None else None

    def speedup_over(self, other: Candidate | None) -> float | None:
        """other's time ÷ winner's (above 1: the winner is faster): from both headline ratios when one timer (or
        the reference's 1) gives both, else from the interleaved ratios when both were timed beside the
        reference, else confirmed medians when both have them — never a confirmed figure against a search-time
        one."""
        if self.winner is None or other is None:
            return None
        led, other_led = self.headline(self.winner), self.headline(other)
        if (
            led is not None
            and other_led is not None
            and (led[1] == other_led[1] or "reference" in (led[1], other_led[1]))
        ):
            return other_led[0] / led[0]
        mine_r, theirs_r = self.interleaved.get(self.winner.id or -1), self.interleaved.get(other.id or -1)
        if mine_r is not None and theirs_r is not None:
            return theirs_r.ratio / mine_r.ratio
        pairs = [(self.winner.confirmed, other.confirmed), (self.winner.measurement, other.measurement)]
        for mine, theirs in pairs:
            if mine is not None and theirs is not None:
                return theirs.median_ms / mine.median_ms
        return None


@dataclass(frozen=True)
class RunReport:
    run: Run
    shapes: list[ShapeReport] = field(default_factory=list)

    @property
    def all_gated(self) -> bool:
        """True when every shape has a candidate that passed the gate (a winner, where timing is claimed)."""
        return all(s.winner is not None or (not s.timing_claimed and s.counts.get("ok", 0) > 0) for s in self.shapes)


_STATUS_ORDER = {"ok": 0, "duplicate": 1, "failed": 2, "pruned": 3, "pending": 4}


def _timed(c: Candidate) -> bool:
    """Timed under the full protocol: a screening measurement is never a result."""
    return c.status == "ok" and c.measurement is not None and c.config.items != () and c.role != "screen"


def _seconds(mine: list[Candidate]) -> dict[str, float]:
    return {
        "compile": sum(c.compile_s or 0.0 for c in mine if c.role != "baseline"),
        "gate": sum(c.gate_s or 0.0 for c in mine),
        "measure": sum(c.measure_s or 0.0 for c in mine),
        "screened": float(sum(1 for c in mine if c.role == "screen" and c.measurement is not None)),
        "timed": float(sum(1 for c in mine if c.role != "screen" and c.measurement is not None)),
    }


def _rank_key(c: Candidate) -> tuple[int, float]:
    # Confirmed finalists rank first (by confirmed median); the rest by search-time median.
    if c.confirmed is not None:
        return (0, c.confirmed.median_ms)
    return (1, c.measurement.median_ms if c.measurement else float("inf"))


def interleaved_ratios(store: Store, mine: list[Candidate]) -> tuple[dict[int, RatioEstimate], Candidate | None]:
    """Each confirmed candidate's ratio to the reference it was timed beside, over its confirmation rounds (a
    round's ratio is the median of its samples' log ratios over A B B A blocks), and the reference."""
    rounds: dict[int, list[float]] = {}
    references: Counter[int] = Counter()
    for c in mine:
        if c.id is None or c.status != "ok" or c.confirmed is None:
            continue
        for reference, log_ratio in store.paired_ratios(c.id):
            rounds.setdefault(c.id, []).append(log_ratio)
            references[reference] += 1
    if not references:
        return {}, None
    ref_id = references.most_common(1)[0][0]
    ref = next((c for c in mine if c.id == ref_id and c.status == "ok"), None)
    if ref is None:  # the reference failed in a later round: its ratios mean nothing now
        return {}, None
    found = {}
    for cid, logs in rounds.items():
        pairs = [(1.0, math.exp(x)) for x in logs]
        found[cid] = ratio_ci(pairs) if len(pairs) >= 2 else RatioEstimate(pairs[0][1], math.nan, math.nan, 1)
    found[ref_id] = RatioEstimate(1.0, 1.0, 1.0, max((r.n for r in found.values()), default=0))
    return found, ref


def second_timer_ratios(store: Store, mine: list[Candidate]) -> dict[int, TimerCheck]:
    """Each confirmed candidate's ratio to its reference by the second timer, over the confirmation rounds that
    timed it so, beside the first timer's ratio of the same rounds (see ``ShapeReport.second_timer``)."""
    found: dict[int, TimerCheck] = {}
    for c in mine:
        if c.id is None or c.status != "ok" or c.confirmed is None:
            continue
        # Only rounds where this candidate was the side timed beside the reference ("paired"): the reference's
        # own stored rounds carry the same pair's telemetry, whose ratio is the other side's.
        stored = [
            (cond.telemetry or {}).get("second_timer")
            for cond in store.confirmation_conditions(c.id)
            if (cond.telemetry or {}).get("paired")
        ]
        checked = combine([check for check in stored if check])
        if checked:
            found[c.id] = checked
    return found


def build_report(store: Store, run: Run) -> RunReport:
    candidates = store.candidates(run.id)
    pruned = store.pruned_counts(run.id)
    reports = []
    for shape in run.shapes:
        mine = [c for c in candidates if c.shape == shape]
        timed = [c for c in mine if _timed(c)]
        ratios, ref = interleaved_ratios(store, mine)
        # Ranked by the interleaved ratios where confirmation paired the finalists with the reference: block
        # medians taken at different moments are not equal conditions under a power cap.
        ranked = sorted(timed, key=lambda c: (0, ratios[c.id].ratio) if c.id in ratios else (1, *_rank_key(c)))
        counts: Counter[str] = Counter(c.status for c in mine)
        reports.append(
            ShapeReport(
                shape=shape,
                winner=ranked[0] if ranked else None,
                baselines=[c for c in mine if c.role == "baseline"],
                slowest=max(timed, key=lambda c: c.measurement.median_ms if c.measurement else 0.0)
                if len(timed) > 1
                else None,
                failed=[c for c in mine if c.status == "failed"],
                counts=dict(counts),
                timing_claimed=run.target.claims_timing,
                pending=counts.get("pending", 0),
                finalists=sorted(
                    (c for c in mine if c.status == "ok" and c.confirmed is not None),
                    key=lambda c: (
                        (0, ratios[c.id].ratio)
                        if c.id in ratios
                        else (1, c.confirmed.median_ms if c.confirmed else 0.0)
                    ),
                ),
                pruned_by_constraint=pruned.get(shape.key, 0),
                seconds=_seconds(mine),
                all_candidates=mine,
                valid_configs=(run.options.get("valid_configs") or {}).get(shape.key),
                cost=(run.options.get("costs") or {}).get(shape.key),
                ceilings=run.options.get("ceilings"),
                interleaved=ratios,
                reference=ref,
                second_timer=second_timer_ratios(store, mine),
            )
        )
    return RunReport(run, reports)


def _candidate_json(c: Candidate | None) -> dict[str, object] | None:
    if c is None:
        return None
    out: dict[str, object] = {
        "id": c.id,
        "role": c.role,
        "label": c.label,
        "config": c.config.as_dict(),
        "status": c.status,
        "failure": c.failure.value if c.failure else None,
        "reason": c.reason,
        "compile_s": c.compile_s,
        "binary_hash": c.binary_hash,
        "resources": dict(c.resources),
    }
    for key, m in (("measurement", c.measurement), ("confirmed", c.confirmed)):
        if m is not None:
            out[key] = {**m.summary(), "spread": m.spread, "conditions": m.conditions.as_dict()}
    if c.verdict is not None:
        out["gate"] = {
            "outcome": c.verdict.outcome,
            "metric": c.verdict.metric,
            "value": c.verdict.value,
            "threshold": c.verdict.threshold,
            "reason": c.verdict.reason,
        }
    return out


def run_json(run: Run) -> dict[str, object]:
    return {
        "id": run.id,
        "problem": run.problem,
        "spec": run.spec_path,
        "spec_hash": run.spec_hash,
        "target": run.target.as_dict(),
        "strategy": run.strategy,
        "budget": run.budget.as_dict(),
        "dtype": run.dtype,
        "seed": run.seed,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "created": run.created,
        "elapsed_s": run.elapsed_s,
        "shapes": [s.as_dict() for s in run.shapes],
        "placement": run.options.get("placement"),
        "shape_slots": run.options.get("shape_slots"),
        "phases": run.options.get("phases"),
    }


def _headline_json(found: tuple[float, str] | None) -> dict[str, object] | None:
    """The ratio the report leads with and its timer (``CUPTI``, ``events``, or ``reference`` for the reference)."""
    return None if found is None else {"value": found[0], "timer": found[1]}


def _ratio_json(r: RatioEstimate) -> dict[str, object]:
    """A ratio to the reference: NaN bounds (one round) are written as null."""
    return {
        "ratio": r.ratio,
        "low": None if math.isnan(r.low) else r.low,
        "high": None if math.isnan(r.high) else r.high,
        "rounds": r.n,
    }


def report_json(report: RunReport) -> dict[str, object]:
    shapes = []
    for s in report.shapes:
        shapes.append(
            {
                "shape": s.shape.as_dict(),
                "timing_claimed": s.timing_claimed,
                "counts": s.counts,
                "outcomes": s.outcome_counts,
                "valid_configs": s.valid_configs,
                "reached": s.reached,
                "disturbed": s.disturbed,
                "seconds": s.seconds,
                "winner": _candidate_json(s.winner),
                "speed_of_light": s.speed_of_light(s.winner),
                "baselines": [
                    {
                        **(_candidate_json(b) or {}),
                        "winner_speedup": s.speedup_over(b),
                        "speed_of_light": s.speed_of_light(b),
                    }
                    for b in s.baselines
                ],
                "slowest": {**(_candidate_json(s.slowest) or {}), "winner_speedup": s.speedup_over(s.slowest)}
                if s.slowest
                else None,
                "failed": [_candidate_json(f) for f in s.failed],
                "reference": s.reference.name if s.reference else None,
                "interleaved": {str(cid): _ratio_json(r) for cid, r in s.interleaved.items()},
                "runners_up": [
                    {
                        "id": c.id,
                        "config": c.config.as_dict(),
                        "search_median_ms": c.measurement.median_ms if c.measurement else None,
                    }
                    for c in s.runners_up()
                ],
                "finalists": [
                    {
                        "id": f.id,
                        "name": f.name,
                        "role": f.role,
                        "config": f.config.as_dict(),
                        "ratio": _headline_json(s.headline(f)),
                        "interleaved_ratio": _ratio_json(s.interleaved[f.id]) if f.id in s.interleaved else None,
                        "second_timer": s.second_timer.get(f.id or -1),
                        "search_median_ms": f.measurement.median_ms if f.measurement else None,
                        "confirmed_median_ms": f.confirmed.median_ms if f.confirmed else None,
                        "confirmed_n": f.confirmed.n if f.confirmed else 0,
                        "speed_of_light": s.speed_of_light(f),
                    }
                    for f in s.finalists
                ],
            }
        )
    return {"run": run_json(report.run), "shapes": shapes, "all_gated": report.all_gated}
