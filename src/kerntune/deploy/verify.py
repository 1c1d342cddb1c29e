"""``kerntune verify -- python PROGRAM ...``: did the deployed table engage, and did the program get faster?

1. Engagement: the program runs once under the profiler with every Dispatcher reporting its decisions at exit
   (``KERNTUNE_VERIFY_OUT``). Each deployed entry is listed with the kernel that ran it (the dispatcher's
   kernel name plus the entry's config: its specialization), the calls it served and, by kernel identity, the
   kernels those calls launched in the profile (per call where the profiler recorded the call as an operator;
   by name where a CUDA graph replays it); every call that missed is listed with its key. An entry that served
   no call never engaged: beside entries that did, the failure this command exists to catch (exit 1).
2. End to end: a fresh-process A/B (``kerntune ab`` protocol, ABBA order, A/A noise band) of the program with
   the table off (``KERNTUNE_DISPATCH=off``: every dispatcher runs its default) against on, on the metric the
   program prints; beside it the dispatched kernels' share of device time and the Amdahl bound 1 / (1 − share),
   the most any tuning of those kernels could give end to end. ``budget_s`` bounds it: a stored A/A band for the
   program is reused, and when the budget ends the interval the pairs reached is reported.

A table that serves nothing (no kerntune Dispatcher was created, the table was not applied, every entry is left to
the library, or no call matched an entry) is said as such, with the counts, and is not a failure: there is no A/B
to run, table off and on being the same program.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kerntune.compare.ab import ABRequest, run_ab
from kerntune.errors import UsageError
from kerntune.runtime.table import Table, load_table
from kerntune.scope.program import profile_program
from kerntune.settings import Settings
from kerntune.store import Store


def _gemm_lines(fields: dict[str, Any], profile: dict[str, Any]) -> list[Any]:
    """The profile's GEMM-like operator lines of a key's call (its shape, batch, layout, bias and dtype), or none
    when the key is not a GEMM's."""
    if not {"M", "N", "K"} <= set(fields):
        return []
    return [
        g
        for g in profile.get("gemms") or []
        if all(g.shape.get(f) == fields.get(f) for f in ("M", "N", "K", "B"))
        and all(fields.get(f) in (None, getattr(g, f)) for f in ("layout", "bias"))
        and (not g.dtype or fields.get("dtype") in (None, g.dtype))
    ]


def _gemm_time(fields: dict[str, Any], profile: dict[str, Any]) -> float | None:
    """The device time the profile gave the library GEMM calls of a missed served key, or None when the key is
    not a GEMM's or the profile has none of it."""
    times = [g.device_us for g in _gemm_lines(fields, profile) if g.device_us is not None]
    return sum(times) if times else None


def _gemm_per_call(fields: dict[str, Any], profile: dict[str, Any]) -> float | None:
    """Device microseconds per call the profile gave a key's GEMM calls (whichever kernel ran them), or None."""
    lines = [g for g in _gemm_lines(fields, profile) if g.device_us is not None and g.calls]
    calls = sum(g.calls for g in lines)
    return sum(g.device_us for g in lines) / calls if calls else None


def _positive(value: object) -> float | None:
    """A table's number as a positive finite float, or None (a bool, a string, an overflow, zero or less)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def _tuned_times(table: str, key: str, cache: dict[str, Table]) -> dict[str, float | None]:
    """What the tune measured for a table entry: its kernel's median and the library's (the median over the
    entry's recorded time ratio to the library baseline), in microseconds; None where the table does not say."""
    if table not in cache:
        cache[table] = load_table(table)[0]
    entry = cache[table].entries.get(key) or {}
    median, ratio = _positive(entry.get("median_ms")), _positive(entry.get("library_ratio"))
    tuned = None if median is None else median * 1e3
    return {"tuned_us": tuned, "tuned_library_us": None if tuned is None or ratio is None else tuned / ratio}


def _identity(
    kernel: str, fields: dict[str, Any] | None, profile: dict[str, Any], launches: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Which kernels ran an entry's calls, by kernel identity in the profile. Where the profiler recorded the calls
    as operators (eager, and the library calls torch.compile leaves), the kernels each call launched (by its
    External id): the dispatcher's own (its name is their common prefix: matmul_kernel, matmul_tma_kernel, ...)
    and any other (the library's, had a call of the key fallen back, or a helper of the spec's own such as a
    split-K reduction). A CUDA-graph replay launches kernels no operator encloses: there only the dispatcher's
    kernels by name, summed over all its entries."""
    lines = _gemm_lines(fields or {}, profile)
    by_line = profile.get("gemm_kernels") or {}
    ran: dict[str, int] = defaultdict(int)
    for line in lines:
        for name, n in (by_line.get(line.identity) or {}).items():
            ran[name] += n
    if ran:
        own = {n: c for n, c in ran.items() if kernel and n.startswith(kernel)}
        return {
            "profiled_by": "operator",
            "profiled_kernels": sorted(own),
            "profiled_launches": sum(own.values()),
            "other_launches": sum(c for n, c in ran.items() if n not in own),
            "other_kernels": sorted(n for n in ran if n not in own),
        }
    seen = [k for n, k in launches.items() if kernel and n.startswith(kernel)]
    return {
        "profiled_by": "kernel name",
        "profiled_kernels": sorted(k["name"] for k in seen),
        "profiled_launches": sum(k["launches"] for k in seen) if seen else None,
        "other_launches": None,
        "other_kernels": [],
    }


def engagement(reports: list[dict[str, Any]], profile: dict[str, Any]) -> dict[str, Any]:
    """Entries with the calls they served and the kernels that ran them, misses with their keys, the hit rate by
    calls, the kernels' share. An entry engaged when it served calls and, where the profile ties kernels to
    calls, its calls launched the dispatcher's kernels."""
    launches = {k["name"]: k for k in profile.get("kernels", [])}
    served: dict[tuple[str, str], int] = defaultdict(int)
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    fields: dict[tuple[str, str], dict[str, Any]] = {}
    misses, disabled, names = [], [], set()
    calls = exact = 0
    for r in reports:
        names.add(r["name"])
        if r["disabled"]:
            disabled.append({"kernel": r["name"], "table": r["table"], "reason": r["disabled"]})
        for key, status in r["entries"].items():
            entries.setdefault(
                (r["table"], key),
                {"table": r["table"], "key": key, "status": status, "kernel": r["name"], "config": None},
            )
        for d in r["decisions"]:
            calls += d["calls"]
            if d["kind"] == "exact":
                exact += d["calls"]
                served[(r["table"], d["key"])] += d["calls"]
                fields[(r["table"], d["key"])] = d.get("fields") or {}
                entries[(r["table"], d["key"])].update(kernel=r["name"], config=d["config"])
            elif d["calls"]:
                misses.append(
                    {
                        "kernel": r["name"],
                        "key": d["key"],
                        "decision": d["kind"],
                        "calls": d["calls"],
                        "config": d["config"],
                        "device_us": _gemm_time(d.get("fields") or {}, profile),
                    }
                )
    rows = []
    tables: dict[str, Table] = {}
    for ident, entry in sorted(entries.items()):
        ran = (
            _identity(entry["kernel"], fields.get(ident), profile, launches)
            if served[ident]
            else {
                "profiled_by": None,
                "profiled_kernels": [],
                "profiled_launches": 0,
                "other_launches": None,
                "other_kernels": [],
            }
        )
        engaged = served[ident] > 0 and (ran["profiled_by"] != "operator" or ran["profiled_launches"] > 0)
        # In the program against in the tune, per call: a served kernel slower in place than when tuned shows here.
        # Only where the profile ties the shape's calls to the entry's kernel alone (no library call among them).
        tied_alone = ran["profiled_by"] == "operator" and not ran["other_launches"]
        in_place = _gemm_per_call(fields.get(ident) or {}, profile) if served[ident] and tied_alone else None
        rows.append(
            {
                **entry,
                "calls": served[ident],
                "engaged": engaged,
                **ran,
                "device_us_per_call": in_place,
                **_tuned_times(entry["table"], entry["key"], tables),
            }
        )
    total = sum(k["device_us"] for k in profile.get("kernels", []))
    own = [k for k in launches.values() if any(n and k["name"].startswith(n) for n in names)]
    mine = sum(k["device_us"] for k in own)
    tied = sum(
        c
        for line in (profile.get("gemm_kernels") or {}).values()
        for name, c in line.items()
        if any(n and name.startswith(n) for n in names)
    )
    share = mine / total if total else None
    return {
        "entries": rows,
        "misses": misses,
        "disabled": disabled,
        "calls": calls,
        "exact_calls": exact,
        "hit_rate": exact / calls if calls else None,
        "kernels": sorted(n for n in names if n),
        "device_share": share,
        "amdahl_bound": 1 / (1 - share) if share is not None and share < 1 else None,
        # the dispatchers' kernels launched where no operator call encloses them: CUDA-graph replays of served
        # calls (or kernels a program launches itself); tied to no entry
        "untied_launches": sum(k["launches"] for k in own) - tied if "gemm_kernels" in profile else None,
        "never_engaged": [r["key"] for r in rows if not r["engaged"]],
    }


def served_op_counts(stats: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per library operator a served program overrode (``kerntune run``): its calls served by a tuned kernel,
    left to the library, and failed (a tuned kernel raised; the library ran it), summed over its processes."""
    ops: dict[str, dict[str, int]] = {}
    for one in stats:
        for op, counts in (one.get("ops") or {}).items():
            row = ops.setdefault(op, {"served": 0, "library": 0, "failed": 0})
            for outcome, n in counts.items():
                row[outcome] = row.get(outcome, 0) + int(n)
    return ops


def budget_seconds(text: str) -> float:
    """``180s``, ``3m``, ``1h`` or ``180`` (seconds) as seconds; a UsageError for anything else."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*", text)
    seconds = float(found.group(1)) * {"s": 1, "m": 60, "h": 3600}[found.group(2) or "s"] if found else math.nan
    if not (0 < seconds < 1e7):
        raise UsageError(f"--budget {text!r}: give the end-to-end A/B's wall-clock time, e.g. 180s, 3m or 1h")
    return seconds


def serves_nothing(found: dict[str, Any], reports: list[dict[str, Any]], served: list[dict[str, Any]]) -> str | None:
    """Why the table served no call, in one sentence, or None when it served some. ``served``: the counts of
    ``kerntune run``'s serving, one per process (none when the program read its table itself)."""
    if found["exact_calls"]:
        return None
    if not reports and not served:
        return (
            "no kerntune Dispatcher was created: the program reads no table (serve one with kerntune run --table, "
            "or build a kerntune.runtime.Dispatcher)"
        )
    rejected = sorted({k for r in reports for k in r.get("rejected") or {}})
    unapplied = {d["reason"] for d in found["disabled"]} | {one["disabled"] for one in served if one.get("disabled")}
    parts = [f"table not applied: {reason}" for reason in sorted(unapplied)]
    if found["left_to_library"]:
        parts.append(f"{len(found['left_to_library'])} entries left to the library (deploy found it faster)")
    if rejected:
        parts.append(f"{len(rejected)} entries break their spec's space and were never applied")
    if found["unresolved_specs"]:
        parts.append(f"no spec given for {', '.join(found['unresolved_specs'])}")
    if not found["entries"] and not found["left_to_library"] and not unapplied:
        parts.append("the table holds no entry a call could read")
    if found["calls"]:
        parts.append(f"none of the {found['calls']} calls matched an applied entry (misses below)")
    return "the table served no call: " + "; ".join(parts or ["no call reached a dispatcher"])


def _summed(served: list[dict[str, Any]], count: str) -> int | None:
    """A native gate's count over the program's processes (None where every process took the Python gate)."""
    counts = [one[count] for one in served if isinstance(one.get(count), int)]
    return sum(counts) if counts else None


def verify(
    command: Sequence[str],
    store: Store,
    settings: Settings,
    *,
    processes: int | None = None,
    metric: str | None = None,
    end_to_end: bool = True,
    engaged: Callable[[dict[str, Any]], None] | None = None,
    budget_s: float | None = None,
) -> dict[str, Any]:
    """Engagement from one profiled run, then (``end_to_end``) the table-off vs table-on A/B. ``engaged`` is
    handed the engagement report as soon as it is known, before the A/B: the A/B runs the program in at least
    eight fresh processes (its A/A band, then A against B), minutes for a compiled model, and a caller that stops
    it keeps what engaged."""
    with tempfile.TemporaryDirectory(prefix="kerntune-verify-") as folder:
        profile = profile_program(command, {"KERNTUNE_VERIFY_OUT": folder, "KERNTUNE_DISPATCH": "on"})
        reports = [r for f in sorted(Path(folder).glob("dispatch-*.json")) for r in json.loads(f.read_text())]
        served = [json.loads(f.read_text()) for f in sorted(Path(folder).glob("serve-*.json"))]
    if profile["exit_code"] != 0:
        raise UsageError(
            f"{shlex.join(command)} exited with {profile['exit_code']} under the profiler: "
            + " | ".join(profile["stderr"].strip().splitlines()[-3:])
        )
    found = {
        "command": shlex.join(command),
        "gpu": profile["gpu"],
        **engagement(reports, profile),
        "served_ops": served_op_counts(served),
        # entries deploy marked library_faster: kerntune run leaves their keys to the library (not a miss)
        "left_to_library": sorted({k for one in served for k in one.get("left_to_library") or []}),
        "rejected": {k: why for r in reports for k, why in (r.get("rejected") or {}).items()},
        "unresolved_specs": sorted({s for one in served for s in one.get("unresolved_specs") or []}),
        # which path decided the served calls: the C++ gate, or the Python one where no compiler built it
        "gates": sorted({str(one["gate"]) for one in served if one.get("gate")}),
        # served forms launched from C++ by a plan, over the program's processes (None: the Python gate)
        "planned_forms": _summed(served, "planned_forms"),
        # plans handed to C++, each checked by at most one more launch of its kernel at its form's planning call
        "plan_checks": _summed(served, "plan_checks"),
    }
    found["serves_nothing"] = serves_nothing(found, reports, served)
    if engaged is not None:
        engaged(found)
    if end_to_end and found["serves_nothing"] is None:
        line = shlex.join(command)
        request = ABRequest(
            a=f"cmd:KERNTUNE_DISPATCH=off {line}",
            b=f"cmd:{line}",
            processes=processes,
            metric=metric,
            budget_s=budget_s,
        )
        record = run_ab(request, settings, store)
        found["end_to_end"] = {
            "ab": record.id,
            "verdict": record.verdict,
            "ratio": record.ratio,
            "ci": [record.ci_low, record.ci_high],
            "band": record.band,
            "speedup": 1 / record.ratio if record.ratio else None,
            "reason": record.reason,
            "pairs": len(record.processes) // 2,
            "budget_s": budget_s,
            # each fresh process's metric in run order: a wide interval shows which processes made it wide
            "processes": [{"side": p.side, "value": p.value} for p in sorted(record.processes, key=lambda p: p.seq)],
        }
    return found
