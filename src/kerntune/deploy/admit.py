"""``kerntune admit TABLE --verified REPORT``: promote a table's entries on evidence, never on hope.

An entry is ``admitted`` when three things are on record: it passed its gate (its run holds the config as a
gated, timed winner for that shape), it won beyond the noise band over the run's default config (search-time or
confirmed medians of the same run, never mixed), and ``kerntune verify`` saw it engaged (it served calls in the
live program). Gate and win without engagement make a ``promotion candidate``; a failed gate makes it
``rejected``; a config no faster than the default beyond noise stays ``measured``. Each entry records why.
The runtime's ``production`` mode applies admitted entries only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kerntune.deploy.artifacts import key_fields, write_artifacts
from kerntune.errors import StoreError, UsageError
from kerntune.model import Config
from kerntune.report.summary import RunReport, ShapeReport, build_report
from kerntune.runtime.table import TableError, entry_key, parse_table
from kerntune.store import Store


def _shape_of(report: RunReport, key: str) -> ShapeReport | None:
    for s in report.shapes:
        if entry_key(key_fields(report, s.shape.as_dict())) == key:
            return s
    return None


def evidence(entry: dict[str, Any], report: RunReport | None, engaged: set[str], noise: float) -> dict[str, Any]:
    """The three checks for one entry, each with its reason, and the status they earn."""
    key = entry_key(entry["key"])
    shape = _shape_of(report, key) if report is not None else None
    config = Config.of(entry["config"]).key
    timed = [
        c
        for c in (shape.all_candidates if shape else [])
        if c.config.key == config and c.role != "screen" and c.measurement is not None
    ]
    gated = any(c.status == "ok" for c in timed)
    why = []
    if report is None:
        why.append(f"its run {entry.get('run')!r} is not in this store")
    elif not gated:
        why.append("no gated, timed candidate of this config for this shape in its run")
    # The run's config baseline: the space's default (or a declared baseline that names a config).
    default = next((b for b in (shape.baselines if shape else []) if b.config.items), None)
    mine = min(timed, key=lambda c: c.measurement.median_ms if c.measurement else 0.0) if timed else None
    speedup = None
    if mine is not None and default is not None and default.config.key != config:
        pairs = [(mine.confirmed, default.confirmed), (mine.measurement, default.measurement)]
        speedup = next((d.median_ms / m.median_ms for m, d in pairs if m is not None and d is not None), None)
    won = speedup is not None and speedup > 1 + noise
    if gated and not won:
        why.append(
            "it is the default config"
            if default is not None and default.config.key == config
            else f"speedup over the default {speedup:.3f}x is within the noise band ({noise:.1%})"
            if speedup is not None
            else "no default-config baseline was timed beside it"
        )
    seen = key in engaged
    if gated and won and not seen:
        why.append("kerntune verify did not see it serve a call")
    status = (
        "admitted"
        if gated and won and seen
        else "promotion candidate"
        if gated and won
        else "rejected"
        if report is not None and not gated
        else "measured"
    )
    return {"status": status, "gated": gated, "won": won, "speedup": speedup, "engaged": seen, "why": why}


def admit(store: Store, table_path: Path, verified: Path, noise: float = 0.02) -> dict[str, Any]:
    """Re-rank every entry of the table on the evidence; write the table back (all three forms)."""
    try:
        data = json.loads(table_path.read_text())
        parse_table(data, str(table_path))
    except (OSError, json.JSONDecodeError, TableError) as exc:
        raise UsageError(f"{table_path}: not a readable dispatch table ({exc})") from exc
    try:
        report = json.loads(verified.read_text())
        engaged = {e["key"] for e in report["entries"] if e["engaged"] and e["table"] == str(table_path)}
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise UsageError(f"{verified}: not a report written by `kerntune verify --report` ({exc})") from exc
    reports: dict[str, RunReport | None] = {}
    rows = []
    for entry in data["entries"]:
        run = str(entry.get("run", ""))
        if run not in reports:
            try:
                reports[run] = build_report(store, store.get_run(run)) if run else None
            except StoreError:
                reports[run] = None
        found = evidence(entry, reports[run], engaged, noise)
        entry["status"], entry["admission"] = found["status"], found
        rows.append({"key": entry_key(entry["key"]), **found})
    written = write_artifacts(table_path, data)
    return {
        "entries": rows,
        "written": written,
        "counts": {s: sum(r["status"] == s for r in rows) for s in sorted({r["status"] for r in rows})},
    }
