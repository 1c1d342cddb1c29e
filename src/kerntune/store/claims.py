"""A/B records and noise bands in the store.

Every ``kerntune ab`` is kept whole: both sides, the md5 of everything involved, every process's raw
samples, the ratio with its interval, the noise band used, and the verdict. The noise band of a scope
(device, scheme, conditions, what A runs, shape) is the one measured by that scope's latest A/A run.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from kerntune.store.jsontext import reading_json, record_json
from kerntune.store.sqlite import Store

REFERENCED = "fresh, beside a reference"
"""The scheme of a fresh-process A/B whose every process also timed a fixed reference beside its side."""


@dataclass(frozen=True)
class ProcessRecord:
    seq: int
    side: str
    """``A`` or ``B``."""
    value: float
    """Milliseconds (the process's median); the side's time over the reference's where each process timed one
    beside it (scheme ``fresh, beside a reference``); or the command's metric as a time-like value (lower is
    better)."""
    samples: tuple[float, ...]
    info: dict[str, Any]


@dataclass(frozen=True)
class ABRecord:
    id: str
    created: str
    kind: str
    """``ab``, or ``aa`` for a comparison of a side with itself (a calibration or a check of the band)."""
    a: dict[str, Any]
    b: dict[str, Any]
    target: dict[str, Any]
    conditions: dict[str, Any]
    scheme: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    band: float | None
    verdict: str
    expect: str | None
    claim_failed: bool
    reason: str
    hashes: dict[str, Any]
    wall_s: float
    processes: tuple[ProcessRecord, ...] = ()


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def save_ab(store: Store, r: ABRecord) -> None:
    with store._transaction() as db:
        db.execute(
            "INSERT INTO ab_runs (id, created, kind, a, b, target, conditions, scheme, ratio, ci_low, ci_high, band,"
            " verdict, expect, claim_failed, reason, hashes, wall_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                r.id,
                r.created,
                r.kind,
                record_json(r.a, "the A/B's side A"),
                record_json(r.b, "the A/B's side B"),
                record_json(r.target, "the A/B's target"),
                reading_json(r.conditions),
                r.scheme,
                r.ratio,
                r.ci_low,
                r.ci_high,
                r.band,
                r.verdict,
                r.expect,
                int(r.claim_failed),
                r.reason,
                record_json(r.hashes, "the A/B's hashes"),
                r.wall_s,
            ),
        )
        db.executemany(
            "INSERT INTO ab_processes (ab_id, seq, side, value, samples, info) VALUES (?,?,?,?,?,?)",
            [
                (r.id, p.seq, p.side, p.value, reading_json(list(p.samples)), reading_json(p.info, default=str))
                for p in r.processes
            ],
        )


def _record(store: Store, row: sqlite3.Row) -> ABRecord:
    processes = tuple(
        ProcessRecord(p["seq"], p["side"], p["value"], tuple(json.loads(p["samples"])), json.loads(p["info"]))
        for p in store.db.execute("SELECT * FROM ab_processes WHERE ab_id=? ORDER BY seq", (row["id"],))
    )
    return ABRecord(
        row["id"],
        row["created"],
        row["kind"],
        json.loads(row["a"]),
        json.loads(row["b"]),
        json.loads(row["target"]),
        json.loads(row["conditions"]),
        row["scheme"],
        row["ratio"],
        row["ci_low"],
        row["ci_high"],
        row["band"],
        row["verdict"],
        row["expect"],
        bool(row["claim_failed"]),
        row["reason"],
        json.loads(row["hashes"]),
        row["wall_s"],
        processes,
    )


def ab_records(store: Store, *, failed_claims_only: bool = False, limit: int = 200) -> list[ABRecord]:
    query = "SELECT * FROM ab_runs" + (" WHERE claim_failed = 1" if failed_claims_only else "")
    rows = store.db.execute(query + " ORDER BY created DESC, rowid DESC LIMIT ?", (limit,)).fetchall()
    return [_record(store, row) for row in rows]


def noise_band(store: Store, scope: str) -> tuple[float, str] | None:
    """The band (a fraction) and the A/A record it came from, for ``scope``; None if never calibrated."""
    row = store.db.execute("SELECT band, ab_id FROM noise_bands WHERE scope=?", (scope,)).fetchone()
    return (float(row[0]), str(row[1])) if row else None


def set_noise_band(store: Store, scope: str, band: float, ab_id: str) -> None:
    store.db.execute(
        "INSERT OR REPLACE INTO noise_bands (scope, band, ab_id, created) VALUES (?,?,?,?)", (scope, band, ab_id, now())
    )
