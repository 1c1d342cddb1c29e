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

from kerntune.compare.runners import ABRequest, SideFailed
from kerntune.compare.sequence import (
    Progress,
    Quiet,
    abba,
    band_scope,
    measure_pair,
    pooled_conditions,
    ratio_estimate,
    second_timer_check,
    set_aside_note,
)
from kerntune.compare.sides import Side, parse_side
from kerntune.errors import UsageError
from kerntune.measure.second_timer import said
from kerntune.measure.stats import RatioEstimate
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.claims import REFERENCED, ABRecord, ProcessRecord, noise_band, now, save_ab, set_noise_band

__all__ = ["ABRequest", "SideFailed", "abba", "claim_holds", "run_ab", "verdict_for"]
EXPECTATIONS = ("win", "loss", "same")


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
def run_ab(request: ABRequest, settings: Settings, store: Store, progress: Progress | None = None) -> ABRecord:
    """Measure A and B, calibrate the noise band if this scope has none, and record the verdict."""
    progress = progress or Quiet()
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
        records, runner, scheme = measure_pair(sides, request, settings, store, count, progress, "A/B", deadline)
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
    conditions = {**pooled_conditions(records), "shape": runner.shape_key, "dtype": runner.dtype}
    if scheme == REFERENCED:  # what each process timed beside its side (part of the noise band's scope)
        conditions["reference"] = request.reference
    checked = second_timer_check(records, scheme)
    if checked:
        conditions["second_timer"] = checked
    scope = band_scope(runner, scheme, conditions)
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
    estimate, set_aside = ratio_estimate(records, scheme)
    # Sampled until decided: an interval across a band edge gets `count` more values per side (a new worker or new
    # processes, the same ABBA order), up to ab_max_processes per side; the verdict's rule stays the same.
    # A new sequence takes two pairs whatever its deadline: it starts only where the budget holds them.
    budget_cut = len(records) < 2 * count  # the budget held fewer pairs than asked
    while undecided(estimate, band) and len(records) // 2 + count <= max(settings.ab_max_processes, count):
        if left() < 2 * pair_s:
            budget_cut = True  # still undecided, and the budget holds no more
            break
        more, _, _ = measure_pair(sides, request, settings, store, count, progress, "A/B, undecided: more", deadline)
        budget_cut = budget_cut or len(more) < 2 * count
        records += [replace(r, seq=len(records) + i) for i, r in enumerate(more)]
        estimate, set_aside = ratio_estimate(records, scheme)
        checked = second_timer_check(records, scheme)
        if checked:
            conditions["second_timer"] = checked
    verdict = verdict_for(estimate, band)
    is_aa = runner.work(0) == runner.work(1)  # same code by content and same resolved config
    expect = request.expect if request.expect is not None else (None if is_aa else "win")
    claim_failed = expect is not None and not claim_holds(verdict, expect)
    reason = _reason(verdict, estimate, band, known[1]) + set_aside_note(set_aside) + said(checked)
    if deadline is not None and (budget_cut or left() <= 0):
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
    records, runner, scheme = measure_pair((side, side), request, settings, store, count, progress, "A/A", deadline)
    estimate, set_aside = ratio_estimate(records, scheme)
    band = max(settings.ab_min_band, estimate.extent)
    complete = len(records) // 2 >= count
    record = ABRecord(
        id=_new_id(),
        created=now(),
        kind="aa",
        a=side.as_dict(),
        b=side.as_dict(),
        target=runner.target,
        conditions=pooled_conditions(records),
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
        + set_aside_note(set_aside),
        hashes=_hashes((side, side), records),
        wall_s=time.perf_counter() - started,
        processes=tuple(records),
    )
    save_ab(store, record)
    if complete:
        set_noise_band(store, scope, band, record.id)
    return record


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
