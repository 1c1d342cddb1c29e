"""The ledger: candidates that failed, across runs, with their reasons — so nobody re-burns the same hours.

A search consults it: a config that failed deterministically (it did not compile, launch, finish, or compute
the right numbers) for the same problem, spec hash, shape and Target is not run again unless asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kerntune.model import FailureKind, Target
from kerntune.store.sqlite import Store

DETERMINISTIC = (FailureKind.COMPILE, FailureKind.LAUNCH, FailureKind.WRONG, FailureKind.CRASH, FailureKind.HANG)
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


def ledger_rows(store: Store, *, problem: str | None = None, kind: str | None = None,
                limit: int = 200) -> list[LedgerRow]:
    """Failed candidates, newest first, optionally for one problem or one failure kind."""
    query = ("SELECT r.id, r.problem, r.spec_hash, r.target, c.shape_key, c.label, c.config_key, c.failure, c.reason"
             " FROM candidates c JOIN runs r ON r.id = c.run_id WHERE c.status = 'failed'")
    args: list[object] = []
    if problem:
        query += " AND r.problem = ?"
        args.append(problem)
    if kind:
        query += " AND c.failure = ?"
        args.append(kind)
    query += " ORDER BY c.finished DESC, c.id DESC LIMIT ?"
    args.append(limit)
    return [
        LedgerRow(row[0], row[1], row[2], Target.from_dict(json.loads(row[3])), row[4], row[6] or row[5],
                  row[7] or "", row[8])
        for row in store.db.execute(query, args).fetchall()
    ]


def prior_failures(store: Store, *, run_id: str, problem: str, spec_hash: str, target: Target,
                   shape_key: str) -> dict[str, LedgerRow]:
    """config key → the earlier deterministic failure of that config, for the same source, shape and Target."""
    kinds = [k.value for k in DETERMINISTIC]
    rows = store.db.execute(
        "SELECT r.id, r.target, c.config_key, c.failure, c.reason FROM candidates c JOIN runs r ON r.id = c.run_id"
        f" WHERE c.status = 'failed' AND r.problem = ? AND r.spec_hash = ? AND c.shape_key = ? AND r.id != ?"
        f" AND c.role = 'search' AND c.failure IN ({','.join('?' * len(kinds))}) AND c.reason NOT LIKE 'skipped:%'"
        " ORDER BY c.id",
        (problem, spec_hash, shape_key, run_id, *kinds)).fetchall()
    found: dict[str, LedgerRow] = {}
    for run, target_json, config_key, failure, reason in rows:
        if Target.from_dict(json.loads(target_json)) == target:
            found.setdefault(config_key, LedgerRow(run, problem, spec_hash, target, shape_key, config_key,
                                                   failure, reason))
    return found
