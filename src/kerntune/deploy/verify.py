"""``kerntune verify -- python PROGRAM ...``: did the deployed table engage, and did the program get faster?

1. Engagement: the program runs once under the profiler with every Dispatcher reporting its decisions at exit
   (``KERNTUNE_VERIFY_OUT``). Each deployed entry is listed with the kernel that ran it (the dispatcher's
   kernel name plus the entry's config: its specialization), the calls it served and the launches of that
   kernel the profiler saw; every call that missed is listed with its key. An entry that served no call never
   engaged: a table nothing reads is the failure this command exists to catch (exit 1).
2. End to end: a fresh-process A/B (``kerntune ab`` protocol, ABBA order, A/A noise band) of the program with
   the table off (``KERNTUNE_DISPATCH=off``: every dispatcher runs its default) against on, on the metric the
   program prints; beside it the dispatched kernels' share of device time and the Amdahl bound 1 / (1 − share),
   the most any tuning of those kernels could give end to end.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kerntune.compare.ab import ABRequest, run_ab
from kerntune.errors import UsageError
from kerntune.scope.program import profile_program
from kerntune.settings import Settings
from kerntune.store import Store


def _gemm_time(fields: dict[str, Any], profile: dict[str, Any]) -> float | None:
    """The device time the profile gave the library GEMM calls of a missed served key (its shape, layout and bias),
    or None when the key is not a GEMM's or the profile has none of it."""
    if not {"M", "N", "K"} <= set(fields):
        return None
    times = [g.device_us for g in profile.get("gemms") or [] if g.device_us is not None
             and all(g.shape.get(f) == fields[f] for f in ("M", "N", "K"))
             and all(fields.get(f) in (None, getattr(g, f)) for f in ("layout", "bias"))]
    return sum(times) if times else None


def engagement(reports: list[dict[str, Any]], profile: dict[str, Any]) -> dict[str, Any]:
    """Entries with the calls they served, misses with their keys, the hit rate by calls, the kernels' share."""
    launches = {k["name"]: k for k in profile.get("kernels", [])}
    served: dict[tuple[str, str], int] = defaultdict(int)
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    misses, disabled, names = [], [], set()
    calls = exact = 0
    for r in reports:
        names.add(r["name"])
        if r["disabled"]:
            disabled.append({"kernel": r["name"], "table": r["table"], "reason": r["disabled"]})
        for key, status in r["entries"].items():
            entries.setdefault((r["table"], key), {"table": r["table"], "key": key, "status": status,
                                                   "kernel": r["name"], "config": None})
        for d in r["decisions"]:
            calls += d["calls"]
            if d["kind"] == "exact":
                exact += d["calls"]
                served[(r["table"], d["key"])] += d["calls"]
                entries[(r["table"], d["key"])].update(kernel=r["name"], config=d["config"])
            elif d["calls"]:
                misses.append({"kernel": r["name"], "key": d["key"], "decision": d["kind"], "calls": d["calls"],
                               "config": d["config"], "device_us": _gemm_time(d.get("fields") or {}, profile)})
    def kernels_of(name: str) -> list[dict[str, Any]]:
        # A dispatcher's name is its kernels' common prefix ("matmul": matmul_kernel, matmul_tma_kernel, ...).
        return [k for n, k in launches.items() if name and n.startswith(name)]

    rows = []
    for ident, entry in sorted(entries.items()):
        seen = kernels_of(entry["kernel"])
        rows.append({**entry, "calls": served[ident], "engaged": served[ident] > 0,
                     "profiled_kernels": sorted(k["name"] for k in seen),
                     "profiled_launches": sum(k["launches"] for k in seen) if seen else None,
                     "profiled_device_us": sum(k["device_us"] for k in seen) if seen else None})
    total = sum(k["device_us"] for k in profile.get("kernels", []))
    mine = sum(k["device_us"] for k in {k["name"]: k for n in names for k in kernels_of(n)}.values())
    share = mine / total if total else None
    return {"entries": rows, "misses": misses, "disabled": disabled, "calls": calls, "exact_calls": exact,
            "hit_rate": exact / calls if calls else None, "kernels": sorted(n for n in names if n),
            "device_share": share, "amdahl_bound": 1 / (1 - share) if share is not None and share < 1 else None,
            "never_engaged": [r["key"] for r in rows if not r["engaged"]]}


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


def verify(command: Sequence[str], store: Store, settings: Settings, *, processes: int | None = None,
           metric: str | None = None, end_to_end: bool = True) -> dict[str, Any]:
    """Engagement from one profiled run, then (``end_to_end``) the table-off vs table-on A/B."""
    with tempfile.TemporaryDirectory(prefix="kerntune-verify-") as folder:
        profile = profile_program(command, {"KERNTUNE_VERIFY_OUT": folder, "KERNTUNE_DISPATCH": "on"})
        reports = [r for f in sorted(Path(folder).glob("dispatch-*.json")) for r in json.loads(f.read_text())]
        served = [json.loads(f.read_text()) for f in sorted(Path(folder).glob("serve-*.json"))]
    if profile["exit_code"] != 0:
        raise UsageError(f"{shlex.join(command)} exited with {profile['exit_code']} under the profiler: "
                         + " | ".join(profile["stderr"].strip().splitlines()[-3:]))
    if not reports:
        raise UsageError(f"{shlex.join(command)} created no kerntune Dispatcher: nothing reads a table (build one "
                         "with kerntune.runtime.Dispatcher or @kerntune.autotune(table=..., op=...))")
    found = {"command": shlex.join(command), "gpu": profile["gpu"], **engagement(reports, profile),
             "served_ops": served_op_counts(served)}
    if end_to_end:
        line = shlex.join(command)
        record = run_ab(ABRequest(a=f"cmd:KERNTUNE_DISPATCH=off {line}", b=f"cmd:{line}", processes=processes,
                                  metric=metric), settings, store)
        found["end_to_end"] = {"ab": record.id, "verdict": record.verdict, "ratio": record.ratio,
                               "ci": [record.ci_low, record.ci_high], "band": record.band,
                               "speedup": 1 / record.ratio if record.ratio else None, "reason": record.reason}
    return found
