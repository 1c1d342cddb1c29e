"""``kerntune ab A B``: is B faster than A, beyond this box's noise?

Protocol (docs/design.md, "A/B claims"):
- ``fresh`` scheme (the default for two spec files, revisions of a whole spec, and commands): every
  measurement runs in a new process, in counterbalanced ABBA order (A B B A A B ...), so drift over the session
  (clocks, temperature, other tenants) does not favour whichever side runs later. Each process warms up
  (discarded) and measures with the full protocol; its median is one value.
- ``in-process`` scheme (the default for two configs or two kernel sources of one spec): one worker loads both
  and times them interleaved launch by launch (A B B A ...), in rounds; each round's medians of A and of B form
  one pair.
- Values are paired (each pair two neighbouring measurements, one per side) and the B/A ratio's 95% interval
  comes from the pairs' log ratios (``stats.ratio_ci``).
- The noise band comes from an A/A run of the same scope (device, scheme, conditions, what A runs, shape),
  made once and stored; never smaller than ``ab_min_band``.
- Sampled until decided: while the interval crosses an edge of the band, ``ab_processes`` more values per side
  are taken, up to ``ab_max_processes`` per side.
- Verdict: ``win`` if the whole interval lies below 1 − band, ``loss`` if above 1 + band, else ``noise``.
  The md5 of every source and binary involved is recorded; both sides must pass the gate.
"""

from __future__ import annotations

import math
import secrets
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from kerntune.compare.runners import ABRequest, CommandRunner, SideFailed, SpecRunner
from kerntune.compare.sides import Side, parse_side
from kerntune.errors import UsageError
from kerntune.measure.second_timer import TimerCheck, agrees, combine, said
from kerntune.measure.stats import DISTURBED_Z, RatioEstimate, ratio_ci, robust_ratio_ci
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.claims import REFERENCED, ABRecord, ProcessRecord, noise_band, now, save_ab, set_noise_band

__all__ = ["ABRequest", "SideFailed", "abba", "claim_holds", "run_ab", "verdict_for"]
EXPECTATIONS = ("win", "loss", "same")


class Progress(Protocol):
    def finished(self, label: str, status: str, detail: str) -> None: ...


class _Quiet:
    def finished(self, label: str, status: str, detail: str) -> None:
        pass


def abba(count: int) -> list[int]:
    """Side indices (0 = A, 1 = B) in counterbalanced order: A B B A A B B A ... (``count`` per side)."""
    order: list[int] = []
    for i in range(count):
        order += [0, 1] if i % 2 == 0 else [1, 0]
    return order


def verdict_for(estimate: RatioEstimate, band: float) -> str:
    if estimate.high < 1.0 - band:
        return "win"
    if estimate.low > 1.0 + band:
        return "loss"
    return "noise"


def undecided(estimate: RatioEstimate, band: float) -> bool:
    """The interval crosses an edge of the band: more pairs could still make it a win, a loss or a clear noise."""
    return estimate.low < 1.0 + band < estimate.high or estimate.low < 1.0 - band < estimate.high


def claim_holds(verdict: str, expect: str) -> bool:
    return verdict == ("noise" if expect == "same" else expect)


# --------------------------------------------------------------------------------------------- the run
def _run_sequence(
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


def _pairs(records: list[ProcessRecord]) -> list[tuple[float, float]]:
    pairs = []
    for first, second in zip(records[::2], records[1::2], strict=True):
        a, b = (first, second) if first.side == "A" else (second, first)
        paired = b.info.get("paired_log_ratio")
        pairs.append((a.value, a.value * math.exp(paired) if paired is not None else b.value))
    return pairs


def _conditions(records: list[ProcessRecord]) -> dict[str, Any]:
    seen: list[dict[str, Any]] = [r.info["conditions"] for r in records if r.info.get("conditions")]
    if not seen:
        return {}
    first = dict(seen[0])
    first["throttled_values"] = sum(1 for c in seen if (c.get("telemetry") or {}).get("throttled"))
    first["other_tenant_values"] = sum(1 for c in seen if (c.get("telemetry") or {}).get("other_tenant"))
    return first


def _second_timer(records: list[ProcessRecord], scheme: str) -> TimerCheck | None:
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


def _runner(
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


def _scope(runner: SpecRunner | CommandRunner, scheme: str, conditions: dict[str, Any]) -> str:
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


def _measure_pair(
    sides: tuple[Side, Side],
    request: ABRequest,
    settings: Settings,
    store: Store,
    count: int,
    progress: Progress,
    label: str,
    deadline: float | None = None,
) -> tuple[list[ProcessRecord], SpecRunner | CommandRunner, str]:
    runner, scheme = _runner(sides, request, settings, store)
    try:
        records = _run_sequence(runner, count, progress, label, deadline)
    finally:
        runner.close()
    return records, runner, scheme


def run_ab(request: ABRequest, settings: Settings, store: Store, progress: Progress | None = None) -> ABRecord:
    """Measure A and B, calibrate the noise band if this scope has none, and record the verdict."""
    progress = progress or _Quiet()
    if request.expect is not None and request.expect not in EXPECTATIONS:
        raise UsageError(f"--expect {request.expect!r}: one of {', '.join(EXPECTATIONS)}")
    if request.scheme not in ("auto", "fresh", "in-process"):
        raise UsageError(f"--scheme {request.scheme!r}: one of auto, fresh, in-process")
    count = request.processes or settings.ab_processes
    if count < 2:
        raise UsageError("--processes must be at least 2: a ratio interval needs two pairs")
    workdir = Path(tempfile.mkdtemp(prefix="kerntune-ab-"))
    sides = (parse_side(request.a, request.spec, workdir), parse_side(request.b, request.spec, workdir))
    started = time.perf_counter()
    deadline = None if request.budget_s is None else started + request.budget_s
    try:
        records, runner, scheme = _measure_pair(sides, request, settings, store, count, progress, "A/B", deadline)
    except SideFailed as exc:
        # A side that fails its gate, crashes or hangs blocks the claim: recorded, so the ledger shows it.
        save_ab(
            store,
            ABRecord(
                id=_new_id(),
                created=now(),
                kind="ab",
                a=sides[0].as_dict(),
                b=sides[1].as_dict(),
                target={},
                conditions={},
                scheme=request.scheme,
                ratio=None,
                ci_low=None,
                ci_high=None,
                band=None,
                verdict="blocked",
                expect=request.expect,
                claim_failed=True,
                reason=str(exc),
                hashes={name: side.hashes() for name, side in zip("AB", sides, strict=True)},
                wall_s=time.perf_counter() - started,
            ),
        )
        raise
    conditions = {**_conditions(records), "shape": runner.shape_key, "dtype": runner.dtype}
    if scheme == REFERENCED:  # what each process timed beside its side (part of the noise band's scope)
        conditions["reference"] = request.reference
    checked = _second_timer(records, scheme)
    if checked:
        conditions["second_timer"] = checked
    scope = _scope(runner, scheme, conditions)
    known = noise_band(store, scope)

    def left() -> float:
        return math.inf if deadline is None else deadline - time.perf_counter()

    floor = f"the floor ±{settings.ab_min_band:.0%}"
    # An A/A takes about as long as the A/B's pairs did: one the budget cannot hold is not started (past a deadline a
    # sequence still takes two pairs, whose interval is the t quantile's width, not the program's noise).
    pair_s = (time.perf_counter() - started) / max(1, len(records) // 2)
    needed_s = count * pair_s
    if (known is None or request.recalibrate) and left() >= needed_s:
        calibration = _calibrate(sides[0], request, settings, store, count, progress, scope, deadline)
        if calibration.verdict == "calibration":
            known = (calibration.band or settings.ab_min_band, calibration.id)
        else:  # cut by the budget after all: a stored band stays the better evidence, else the floor
            taken = len(calibration.processes) // 2
            cut = f"{calibration.id} cut by the budget after {taken} of {count} pairs, not kept"
            known = (known[0], f"{known[1]}; {cut}") if known else (settings.ab_min_band, f"{cut}: {floor}")
    elif known is None:  # no time left for an A/A run: the least band, and said
        known = (
            settings.ab_min_band,
            f"none: the budget ended first ({max(0.0, left()):.0f} s left of the ~{needed_s:.0f} s an A/A of "
            f"{count} pairs takes), so {floor}",
        )
    band = max(settings.ab_min_band, known[0])
    estimate, set_aside = _estimate(records, scheme)
    # Sampled until decided: an interval across a band edge gets `count` more values per side (a new worker or new
    # processes, the same ABBA order), up to ab_max_processes per side; the verdict's rule stays the same.
    # A new sequence takes two pairs whatever its deadline: it starts only where the budget holds them.
    while (
        undecided(estimate, band)
        and len(records) // 2 + count <= max(settings.ab_max_processes, count)
        and left() >= 2 * pair_s
    ):
        more, _, _ = _measure_pair(sides, request, settings, store, count, progress, "A/B, undecided: more", deadline)
        records += [replace(r, seq=len(records) + i) for i, r in enumerate(more)]
        estimate, set_aside = _estimate(records, scheme)
        checked = _second_timer(records, scheme)
        if checked:
            conditions["second_timer"] = checked
    verdict = verdict_for(estimate, band)
    is_aa = runner.work(0) == runner.work(1)  # same code by content and same resolved config
    expect = request.expect if request.expect is not None else (None if is_aa else "win")
    claim_failed = expect is not None and not claim_holds(verdict, expect)
    reason = _reason(verdict, estimate, band, known[1]) + _set_aside(set_aside) + said(checked)
    if deadline is not None and (left() <= 0 or len(records) // 2 < count):  # the budget held fewer pairs
        reason += f"; the budget of {request.budget_s:g} s ended: the interval is the one {estimate.n} pairs reached"
    record = ABRecord(
        id=_new_id(),
        created=now(),
        kind="aa" if is_aa else "ab",
        a=sides[0].as_dict(),
        b=sides[1].as_dict(),
        target=runner.target,
        conditions=conditions,
        scheme=scheme,
        ratio=estimate.ratio,
        ci_low=estimate.low,
        ci_high=estimate.high,
        band=band,
        verdict=verdict,
        expect=request.expect,
        claim_failed=claim_failed,
        reason=reason,
        hashes=_hashes(sides, records),
        wall_s=time.perf_counter() - started,
        processes=tuple(records),
    )
    save_ab(store, record)
    return record


def _calibrate(
    side: Side,
    request: ABRequest,
    settings: Settings,
    store: Store,
    count: int,
    progress: Progress,
    scope: str,
    deadline: float | None = None,
) -> ABRecord:
    """An A/A run of ``side`` in this scope: the farthest its ratio interval reaches from 1 is the band. One that
    the deadline cut short of ``count`` pairs is recorded (verdict ``calibration cut``) but not kept as the
    scope's band: two or three pairs give an interval as wide as the t quantile makes it, which a later run in
    the scope would inherit."""
    started = time.perf_counter()
    records, runner, scheme = _measure_pair((side, side), request, settings, store, count, progress, "A/A", deadline)
    estimate, set_aside = _estimate(records, scheme)
    band = max(settings.ab_min_band, estimate.extent)
    complete = len(records) // 2 >= count
    record = ABRecord(
        id=_new_id(),
        created=now(),
        kind="aa",
        a=side.as_dict(),
        b=side.as_dict(),
        target=runner.target,
        conditions=_conditions(records),
        scheme=scheme,
        ratio=estimate.ratio,
        ci_low=estimate.low,
        ci_high=estimate.high,
        band=band,
        verdict="calibration" if complete else "calibration cut",
        expect=None,
        claim_failed=False,
        reason=f"noise band calibration: A/A interval reaches {estimate.extent:.2%} from 1; band {band:.2%}"
        + ("" if complete else f"; cut by the budget after {len(records) // 2} of {count} pairs: not kept")
        + _set_aside(set_aside),
        hashes=_hashes((side, side), records),
        wall_s=time.perf_counter() - started,
        processes=tuple(records),
    )
    save_ab(store, record)
    if complete:
        set_noise_band(store, scope, band, record.id)
    return record


def _estimate(records: list[ProcessRecord], scheme: str) -> tuple[RatioEstimate, tuple[float, float] | None]:
    """The B/A ratio and its interval over the pairs. Fresh processes: robust to one disturbed process (a pair far
    from the rest is set aside, and said). In one worker every pair is kept: its rounds share the process."""
    if scheme in ("fresh", REFERENCED):
        return robust_ratio_ci(_pairs(records))
    return ratio_ci(_pairs(records)), None


def _set_aside(pair: tuple[float, float] | None) -> str:
    if pair is None:
        return ""
    a, b = pair
    return (
        f"; one pair set aside as disturbed (B/A {b / a:.4f}, more than {DISTURBED_Z:g} robust standard "
        "deviations from the others' median)"
    )


def _reason(verdict: str, est: RatioEstimate, band: float, calibration: str) -> str:
    ci = f"B/A time ratio {est.ratio:.4f} (95% CI {est.low:.4f}–{est.high:.4f}, {est.n} pairs)"
    where = f"noise band ±{band:.2%} (A/A {calibration})"
    text = {
        "win": "B is faster beyond noise",
        "loss": "B is slower beyond noise",
        "noise": "no difference beyond noise",
    }[verdict]
    return f"{text}: {ci}; {where}"


def _hashes(sides: tuple[Side, Side], records: list[ProcessRecord]) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, side in zip("AB", sides, strict=True):
        binaries = sorted({str(r.info["binary_hash"]) for r in records if r.side == name and r.info.get("binary_hash")})
        out[name] = {**side.hashes(), **({"binaries": binaries} if binaries else {})}
    return out


def _new_id() -> str:
    return "ab-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
