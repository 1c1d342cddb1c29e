"""Running an A/B's two sides in counterbalanced order and reading their values: the runner a pair of sides
takes, the ABBA sequence within a deadline, the pairs' B/A estimate, the second timer's check and the scope a noise
band applies to."""

from __future__ import annotations

import math
import time
from typing import Any, Protocol

from kerntune.compare.runners import ABRequest, CommandRunner, SpecRunner
from kerntune.compare.sides import Side
from kerntune.errors import UsageError
from kerntune.measure.second_timer import TimerCheck, agrees, combine
from kerntune.measure.stats import DISTURBED_Z, RatioEstimate, ratio_ci, robust_ratio_ci
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.claims import REFERENCED, ProcessRecord


class Progress(Protocol):
    def finished(self, label: str, status: str, detail: str) -> None: ...


class Quiet:
    def finished(self, label: str, status: str, detail: str) -> None:
        pass


def abba(count: int) -> list[int]:
    """Side indices (0 = A, 1 = B) in counterbalanced order: A B B A A B B A ... (``count`` per side)."""
    order: list[int] = []
    for i in range(count):
        order += [0, 1] if i % 2 == 0 else [1, 0]
    return order


def run_sequence(
    runner: SpecRunner | CommandRunner, count: int, progress: Progress, label: str, deadline: float | None = None
) -> list[ProcessRecord]:
    """``count`` values per side. Once two pairs are taken, a pair starts only if, at the time the pairs so far
    took on average, it ends by ``deadline`` (a ``time.perf_counter`` reading)."""
    records: list[ProcessRecord] = []
    if isinstance(runner, SpecRunner) and runner.in_process:
        for round_ in range(count):
            for side, (value, samples, info) in zip("AB", runner.pair(), strict=True):
                records.append(ProcessRecord(len(records), side, value, samples, info))
            progress.finished(
                f"{label} round {round_ + 1}/{count}", "ok", f"A {records[-2].value:.5g}  B {records[-1].value:.5g}"
            )
        return records
    started = time.perf_counter()
    for seq, index in enumerate(abba(count)):
        if seq % 2 == 0 and seq >= 4 and deadline is not None:
            now = time.perf_counter()
            if now + 2 * (now - started) / seq > deadline:
                break
        value, samples, info = runner.value(index)
        records.append(ProcessRecord(seq, "AB"[index], value, samples, info))
        progress.finished(f"{label} {seq + 1}/{2 * count} {'AB'[index]}", "ok", f"{value:.5g}")
    return records


def pairs_of(records: list[ProcessRecord]) -> list[tuple[float, float]]:
    pairs = []
    for first, second in zip(records[::2], records[1::2], strict=True):
        a, b = (first, second) if first.side == "A" else (second, first)
        paired = b.info.get("paired_log_ratio")
        pairs.append((a.value, a.value * math.exp(paired) if paired is not None else b.value))
    return pairs


def pooled_conditions(records: list[ProcessRecord]) -> dict[str, Any]:
    seen: list[dict[str, Any]] = [r.info["conditions"] for r in records if r.info.get("conditions")]
    if not seen:
        return {}
    first = dict(seen[0])
    first["throttled_values"] = sum(1 for c in seen if (c.get("telemetry") or {}).get("throttled"))
    first["other_tenant_values"] = sum(1 for c in seen if (c.get("telemetry") or {}).get("other_tenant"))
    return first


def second_timer_check(records: list[ProcessRecord], scheme: str) -> TimerCheck | None:
    """B over A by the second timer (``measure.second_timer``) where the processes had one: in-process, B's
    rounds timed beside A; referenced, each side's rounds timed beside the reference, B's over A's."""

    def checks(side: str) -> TimerCheck | None:
        stored = [
            ((r.info.get("conditions") or {}).get("telemetry") or {}).get("second_timer")
            for r in records
            if r.side == side
        ]
        return combine([check for check in stored if check])

    b = checks("B")
    if scheme != REFERENCED or b is None:
        return b if scheme == "in-process" else None
    a = checks("A")
    if a is None:
        return None
    ratio, events = b["ratio"] / a["ratio"], b["events_ratio"] / a["events_ratio"]
    return {
        **b,
        "ratio": ratio,
        "events_ratio": events,
        "rounds": min(a["rounds"], b["rounds"]),
        "agrees": agrees(events, ratio),
    }


def runner_for(
    sides: tuple[Side, Side], request: ABRequest, settings: Settings, store: Store
) -> tuple[SpecRunner | CommandRunner, str]:
    kinds = {s.kind for s in sides}
    if len(kinds) > 1:
        raise UsageError(
            "both sides must be specs (or kernel sources) or both commands: "
            "a command's metric and a kernel's time are not comparable"
        )
    if "command" in kinds:
        if request.scheme == "in-process":
            raise UsageError("commands always run in fresh processes: drop --scheme in-process")
        return CommandRunner(sides, request, settings), "fresh"
    # Two configs or two kernel sources of one spec load into one worker and are timed interleaved; two specs
    # (or two revisions of a whole spec folder) may differ in anything the spec file does, so fresh processes.
    one_spec = sides[0].spec_path == sides[1].spec_path
    if request.scheme == "in-process" and not one_spec:
        raise UsageError(
            "in-process A/B needs one spec (two of its configs or kernel sources); these sides are "
            "two spec files, which take fresh processes to load: use --scheme fresh (the default)"
        )
    if request.scheme == "in-process" and sides[0].env != sides[1].env:
        raise UsageError(
            "the sides set different environment variables, which take effect when a process starts: "
            "they run in fresh processes (drop --scheme in-process)"
        )
    in_process = request.scheme == "in-process" or (
        request.scheme == "auto" and one_spec and sides[0].env == sides[1].env
    )
    if in_process and settings.mode == "graph":
        raise UsageError(
            "the in-process A/B interleaves single launches (eager): with KERNTUNE_MODE=graph use --scheme fresh"
        )
    runner = SpecRunner(sides, request, settings, store, in_process)
    return runner, "in-process" if in_process else (REFERENCED if runner.referenced else "fresh")


def band_scope(runner: SpecRunner | CommandRunner, scheme: str, conditions: dict[str, Any]) -> str:
    """Where a noise band applies: device, scheme, conditions, what side A runs (by content and resolved
    config: ``SPEC`` and ``SPEC@K=default`` are one scope), shape and dtype."""
    keys = ("timer", "regime", "mode", "reference")
    cond = ",".join(str(conditions.get(k, "")) for k in keys)
    return "|".join(
        (
            str(runner.target.get("device_name") or runner.target.get("label")),
            scheme,
            cond,
            runner.work(0),
            runner.shape_key,
            runner.dtype,
        )
    )


def measure_pair(
    sides: tuple[Side, Side],
    request: ABRequest,
    settings: Settings,
    store: Store,
    count: int,
    progress: Progress,
    label: str,
    deadline: float | None = None,
) -> tuple[list[ProcessRecord], SpecRunner | CommandRunner, str]:
    runner, scheme = runner_for(sides, request, settings, store)
    try:
        records = run_sequence(runner, count, progress, label, deadline)
    finally:
        runner.close()
    return records, runner, scheme


def ratio_estimate(records: list[ProcessRecord], scheme: str) -> tuple[RatioEstimate, tuple[float, float] | None]:
    """The B/A ratio and its interval over the pairs. Fresh processes: robust to one disturbed process (a pair far
    from the rest is set aside, and said). In one worker every pair is kept: its rounds share the process."""
    if scheme in ("fresh", REFERENCED):
        return robust_ratio_ci(pairs_of(records))
    return ratio_ci(pairs_of(records)), None


def set_aside_note(pair: tuple[float, float] | None) -> str:
    if pair is None:
        return ""
    a, b = pair
    return (
        f"; one pair set aside as disturbed (B/A {b / a:.4f}, more than {DISTURBED_Z:g} robust standard "
        "deviations from the others' median)"
    )
