"""The ledger: candidates that failed, A/B claims that did not hold, and configs pruned (by a constraint before
the search, or by their compiled resources before timing), across runs, with their reasons — so nobody re-burns
the same hours.

A search consults it: a config that failed deterministically (it did not compile, launch, finish, or compute
the right numbers) for the same problem, spec hash, shape and Target is not run again unless asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kerntune.model import FailureKind, Target
from kerntune.store.claims import ab_records
from kerntune.store.sqlite import Store

DETERMINISTIC = (
    FailureKind.COMPILE,
    FailureKind.LAUNCH,
    FailureKind.WRONG,
    FailureKind.CRASH,
    FailureKind.HANG,
    FailureKind.UNSUPPORTED,
)
"""Failure kinds that repeat for the same source, config, shape and device. Out-of-memory and unexpected
errors can depend on what else ran, so they are never skipped on the ledger's word."""


@dataclass(frozen=True)
class LedgerRow:
    run_id: str
    problem: str
    spec_hash: str
    target: Target
    shape_key: str
    candidate: str
    failure: str
    reason: str


CLAIM = "claim"
"""The ledger kind of a failed A/B claim (``kerntune ab`` whose expectation did not hold)."""
PRUNED = "pruned"
"""The ledger kind of configs a constraint removed before the search (counted per constraint and shape) and of
compiled configs not timed because their resources cannot launch or reach the minimum occupancy (one row each)."""


def pruned_rows(store: Store, problem: str | None = None, limit: int = 200) -> list[LedgerRow]:
    only, args = (" AND r.problem = ?", [problem]) if problem else ("", [])
    compiled = (
        "SELECT r.id, r.problem, r.spec_hash, r.target, c.shape_key, c.config_key, c.reason FROM candidates c"
        " JOIN runs r ON r.id = c.run_id WHERE c.status = 'pruned'"
        + only
        + " ORDER BY c.finished DESC, c.id DESC LIMIT ?"
    )
    rows = [
        LedgerRow(
            row[0],
            row[1],
            row[2],
            Target.from_dict(json.loads(row[3])),
            row[4],
            row[5],
            PRUNED,
            f"pruned after compiling: {row[6]}",
        )
        for row in store.db.execute(compiled, [*args, limit]).fetchall()
    ]
    query = (
        "SELECT r.id, r.problem, r.spec_hash, r.target, p.shape_key, p.reason, p.count FROM pruned p"
        " JOIN runs r ON r.id = p.run_id WHERE 1 = 1" + only + " ORDER BY r.created DESC, p.reason LIMIT ?"
    )
    rows += [
        LedgerRow(
            row[0],
            row[1],
            row[2],
            Target.from_dict(json.loads(row[3])),
            row[4],
            f"{row[6]} configs",
            PRUNED,
            f"pruned by constraint {row[5]!r}",
        )
        for row in store.db.execute(query, [*args, limit]).fetchall()
    ]
    return rows[:limit]


def claim_rows(store: Store, limit: int = 200) -> list[LedgerRow]:
    """A/B claims that failed: the expected win (or loss, or sameness) was not what the protocol found."""
    rows = []
    for r in ab_records(store, failed_claims_only=True, limit=limit):
        target = (
            r.target
            if "backend" in r.target
            else {
                "backend": "command" if r.a.get("command") else "",
                "vendor": "",
                "arch": "host" if r.a.get("command") else "",
                "device_name": str(r.target.get("label", "")),
                "compute_units": 0,
            }
        )
        shape = str(r.conditions.get("shape", ""))
        expected = r.expect or "win"
        rows.append(
            LedgerRow(
                r.id,
                r.a.get("spec") or r.a.get("command", ""),
                "",
                Target.from_dict(target),
                shape,
                f"A={r.a['text']} B={r.b['text']}",
                CLAIM,
                f"expected {expected}, got {r.verdict}: {r.reason}",
            )
        )
    return rows


def ledger_rows(
    store: Store, *, problem: str | None = None, kind: str | None = None, limit: int = 200
) -> list[LedgerRow]:
    """Failed candidates and failed A/B claims, newest first, optionally for one problem or one kind."""
    if kind == CLAIM:
        return [r for r in claim_rows(store, limit) if problem is None or problem in r.problem][:limit]
    if kind == PRUNED:
        return pruned_rows(store, problem, limit)
    query = (
        "SELECT r.id, r.problem, r.spec_hash, r.target, c.shape_key, c.label, c.config_key, c.failure, c.reason"
        " FROM candidates c JOIN runs r ON r.id = c.run_id WHERE c.status = 'failed'"
    )
    args: list[object] = []
    if problem:
        query += " AND r.problem = ?"
        args.append(problem)
    if kind:
        query += " AND c.failure = ?"
        args.append(kind)
    query += " ORDER BY c.finished DESC, c.id DESC LIMIT ?"
    args.append(limit)
    rows = [
        LedgerRow(
            row[0], row[1], row[2], Target.from_dict(json.loads(row[3])), row[4], row[6] or row[5], row[7] or "", row[8]
        )
        for row in store.db.execute(query, args).fetchall()
    ]
    if kind is None:
        rows += [r for r in claim_rows(store, limit) if problem is None or problem in r.problem]
        rows += pruned_rows(store, problem, limit)
    return rows[:limit]


def prior_failures(
    store: Store, *, run_id: str, problem: str, spec_hash: str, target: Target, shape_key: str
) -> dict[str, LedgerRow]:
    """config key → the earlier deterministic failure of that config, for the same source, shape and Target."""
    kinds = [k.value for k in DETERMINISTIC]
    rows = store.db.execute(
        "SELECT r.id, r.target, c.config_key, c.failure, c.reason FROM candidates c JOIN runs r ON r.id = c.run_id"
        f" WHERE c.status = 'failed' AND r.problem = ? AND r.spec_hash = ? AND c.shape_key = ? AND r.id != ?"
        " AND c.role IN ('search', 'screen')"
        f" AND c.failure IN ({','.join('?' * len(kinds))}) AND c.reason NOT LIKE 'skipped:%'"
        " ORDER BY c.id",
        (problem, spec_hash, shape_key, run_id, *kinds),
    ).fetchall()
    found: dict[str, LedgerRow] = {}
    for run, target_json, config_key, failure, reason in rows:
        if Target.from_dict(json.loads(target_json)) == target:
            found.setdefault(
                config_key, LedgerRow(run, problem, spec_hash, target, shape_key, config_key, failure, reason)
            )
    return found
