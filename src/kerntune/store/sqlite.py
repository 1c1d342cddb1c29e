"""The store: SQLite (WAL) under ``.kerntune/`` holding runs, candidates, raw samples and verdicts.

Every candidate row is written when it starts (``pending``) and completed in one transaction when it
finishes, so a run killed at any instant leaves finished candidates intact and at most one pending row,
which ``--resume`` evaluates again.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kerntune.errors import RunNotFound, StoreError
from kerntune.model import (
    Budget,
    Candidate,
    Conditions,
    Config,
    FailureKind,
    Measurement,
    Run,
    Shape,
    Target,
    Verdict,
)
from kerntune.store.jsontext import reading_json, record_json
from kerntune.store.schema import SCHEMA


@dataclass(frozen=True)
class CandidateResult:
    """What the tuner records when a candidate finishes."""

    status: str
    failure: FailureKind | None = None
    reason: str = ""
    compile_s: float | None = None
    binary_hash: str | None = None
    resources: dict[str, object] | None = None
    measurement: Measurement | None = None
    verdict: Verdict | None = None
    gate_s: float | None = None
    measure_s: float | None = None


class Store:
    """One SQLite database file. Safe to open from several processes (WAL, busy timeout)."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            self.path = self.home / "kerntune.sqlite"
            self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(SCHEMA)
            self._migrate()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the store in {str(home)!r}: {exc}; choose another --store folder") from exc

    def close(self) -> None:
        self.db.close()

    def _migrate(self) -> None:
        """Columns added after a store may have been created: add them where missing (old rows keep NULL)."""
        added = {
            "measurements": {
                "ci_low": "REAL",
                "ci_high": "REAL",
                "phase": "TEXT NOT NULL DEFAULT 'search'",
                "round": "INTEGER NOT NULL DEFAULT 0",
            },
            "candidates": {"gate_s": "REAL", "measure_s": "REAL"},
        }
        for table, names in added.items():
            columns = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})").fetchall()}
            for name, kind in names.items():
                if name not in columns:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            if self.db.in_transaction:  # SQLite has rolled back itself after some errors (a full disk)
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ------------------------------------------------------------------------------------------ runs
    def create_run(self, run: Run) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO runs (id, created, problem, spec_path, spec_hash, target, strategy, budget, shapes,"
                " dtype, seed, options, status, stop_reason, elapsed_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run.id,
                    run.created,
                    run.problem,
                    run.spec_path,
                    run.spec_hash,
                    record_json(run.target.as_dict(), "the run's target"),
                    run.strategy,
                    record_json(run.budget.as_dict(), "the run's budget"),
                    record_json([s.as_dict() for s in run.shapes], "the run's shapes"),
                    run.dtype,
                    run.seed,
                    record_json(dict(run.options), "the run's options"),
                    run.status,
                    run.stop_reason,
                    run.elapsed_s,
                ),
            )

    def update_run(
        self, run_id: str, *, status: str | None = None, stop_reason: str | None = None, elapsed_s: float | None = None
    ) -> None:
        sets, values = [], []
        for column, value in (("status", status), ("stop_reason", stop_reason), ("elapsed_s", elapsed_s)):
            if value is not None:
                sets.append(f"{column} = ?")
                values.append(value)
        if sets:
            self.db.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id = ?", (*values, run_id))

    def set_run_option(self, run_id: str, key: str, name: str, value: object) -> None:
        """Set ``options[key][name] = value`` in one statement (safe beside other writers of the same run)."""
        path = f'$."{key}"'
        self.db.execute(
            "UPDATE runs SET options = json_set(options, ?, json_patch(coalesce(json_extract(options, ?),"
            " '{}'), ?)) WHERE id = ?",
            (path, path, record_json({name: value}, f"the run's option {key}"), run_id),
        )

    @contextmanager
    def run_lock(self, run_id: str) -> Iterator[None]:
        """Hold the run's lock while tuning it: two processes tuning one run would write doubled, contended
        measurements. A run another process holds is a StoreError at once (nothing waits)."""
        from filelock import FileLock, Timeout

        path = self.home / "locks" / f"run-{run_id}.lock"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(path))
            lock.acquire(timeout=0)
        except Timeout:
            raise StoreError(
                f"tuning run {run_id} is being tuned by another kerntune process (it holds {path}): wait for it to "
                "end, or stop it, then `kerntune tune --resume` again"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def _run(self, row: sqlite3.Row) -> Run:
        """A run row as a Run; a row edited by hand into something else is a StoreError naming the run."""
        try:
            return self._run_of(row)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise StoreError(
                f"tuning run {row['id']!r} in {self.path} is not a valid record ({type(exc).__name__}: {exc}); "
                "restore the row or delete the tuning run"
            ) from None

    @staticmethod
    def _run_of(row: sqlite3.Row) -> Run:
        budget = json.loads(row["budget"])
        return Run(
            id=row["id"],
            problem=row["problem"],
            spec_path=row["spec_path"],
            spec_hash=row["spec_hash"],
            target=Target.from_dict(json.loads(row["target"])),
            strategy=row["strategy"],
            budget=Budget(budget.get("evaluations"), budget.get("seconds"), budget.get("shape_seconds")),
            shapes=tuple(Shape.of(s) for s in json.loads(row["shapes"])),
            dtype=row["dtype"],
            seed=row["seed"],
            status=row["status"],
            stop_reason=row["stop_reason"],
            created=row["created"],
            elapsed_s=row["elapsed_s"],
            options=json.loads(row["options"]),
        )

    def get_run(self, ref: str) -> Run:
        """A run by id, unique id prefix, or ``last``."""
        if ref == "last":
            rows = self.db.execute("SELECT * FROM runs ORDER BY created DESC, rowid DESC LIMIT 1").fetchall()
        else:
            # The ref is a prefix compared as text, never a pattern: LIKE would match its wildcards and refuses
            # a pattern over 50,000 bytes.
            rows = self.db.execute(
                "SELECT * FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id", (len(ref), ref)
            ).fetchall()
        if not rows:
            shown = ref if len(ref) <= 80 else f"{ref[:60]}... ({len(ref):,} characters)"
            raise RunNotFound(f"no tuning run {shown!r} in {self.path}: `kerntune history` lists the tuning runs there")
        if len(rows) > 1:
            ids = ", ".join(r["id"] for r in rows[:5])
            raise StoreError(f"tuning run prefix {ref!r} is ambiguous ({ids}, ...): give more of the id")
        return self._run(rows[0])

    def runs(self, limit: int = 50) -> list[Run]:
        rows = self.db.execute("SELECT * FROM runs ORDER BY created DESC, rowid DESC LIMIT ?", (limit,))
        return [self._run(r) for r in rows.fetchall()]

    # ------------------------------------------------------------------------------------ candidates
    def start_candidate(self, run_id: str, shape: Shape, config: Config, role: str, label: str) -> int:
        """Insert (or reuse, after a kill) the pending row of a candidate; return its id."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT id, status FROM candidates WHERE run_id=? AND shape_key=? AND role=? AND label=?"
                " AND config_key=?",
                (run_id, shape.key, role, label, config.key),
            ).fetchone()
            if row is not None:
                if row["status"] != "pending":
                    raise StoreError(f"candidate {label or config.key} already finished in tuning run {run_id}")
                # A pending row is a candidate interrupted mid-way: its partial data is dropped.
                self._delete_results(db, [row["id"]])
                db.execute("UPDATE candidates SET started=? WHERE id=?", (time.time(), row["id"]))
                return int(row["id"])
            cursor = db.execute(
                "INSERT INTO candidates (run_id, shape_key, shape, config_key, config, role, label, status,"
                " started) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    shape.key,
                    record_json(shape.as_dict(), "the candidate's shape"),
                    config.key,
                    record_json(config.as_dict(), "the candidate's config"),
                    role,
                    label,
                    "pending",
                    time.time(),
                ),
            )
            return int(cursor.lastrowid or 0)

    @staticmethod
    def _delete_results(db: sqlite3.Connection, ids: Sequence[int]) -> None:
        for cid in ids:
            db.execute(
                "DELETE FROM samples WHERE measurement_id IN (SELECT id FROM measurements WHERE candidate_id=?)", (cid,)
            )
            db.execute("DELETE FROM measurements WHERE candidate_id=?", (cid,))
            db.execute("DELETE FROM verdicts WHERE candidate_id=?", (cid,))

    def finish_candidate(self, candidate_id: int, result: CandidateResult) -> None:
        """Record everything a candidate produced, atomically."""
        with self._transaction() as db:
            db.execute(
                "UPDATE candidates SET status=?, failure=?, reason=?, compile_s=?, binary_hash=?, resources=?,"
                " finished=?, gate_s=?, measure_s=? WHERE id=?",
                (
                    result.status,
                    result.failure.value if result.failure else None,
                    result.reason,
                    result.compile_s,
                    result.binary_hash,
                    reading_json(result.resources or {}),
                    time.time(),
                    result.gate_s,
                    result.measure_s,
                    candidate_id,
                ),
            )
            if result.verdict is not None:
                v = result.verdict
                db.execute(
                    "INSERT INTO verdicts (candidate_id, kind, outcome, metric, value, threshold, reason, details)"
                    " VALUES (?,?,?,?,?,?,?,?)",
                    (
                        candidate_id,
                        v.kind,
                        v.outcome,
                        v.metric,
                        v.value,
                        v.threshold,
                        v.reason,
                        reading_json(dict(v.details)),
                    ),
                )
            if result.measurement is not None:
                self._insert_measurement(db, candidate_id, result.measurement, "search", 0)

    @staticmethod
    def _insert_measurement(db: sqlite3.Connection, candidate_id: int, m: Measurement, phase: str, round_: int) -> None:
        ci = m.ci or (None, None)
        cursor = db.execute(
            "INSERT INTO measurements (candidate_id, conditions, median_ms, n, created, phase, round, ci_low, ci_high)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (
                candidate_id,
                reading_json(m.conditions.as_dict()),
                m.median_ms,
                m.n,
                time.time(),
                phase,
                round_,
                ci[0],
                ci[1],
            ),
        )
        mid = cursor.lastrowid
        db.executemany(
            "INSERT INTO samples (measurement_id, seq, ms) VALUES (?,?,?)",
            [(mid, i, s) for i, s in enumerate(m.samples_ms)],
        )

    def fail_candidate(self, candidate_id: int, failure: FailureKind, reason: str) -> None:
        """Mark a finished candidate failed (it failed when checked again); its measurements stay on record."""
        self.db.execute(
            "UPDATE candidates SET status='failed', failure=?, reason=? WHERE id=?",
            (failure.value, reason, candidate_id),
        )

    def add_confirmation(self, candidate_id: int, measurement: Measurement, round_: int) -> None:
        """Record one confirmation round of a finished candidate (its search-time row is left as it is)."""
        with self._transaction() as db:
            self._insert_measurement(db, candidate_id, measurement, "confirm", round_)

    def confirmed_rounds(self, candidate_id: int) -> set[int]:
        rows = self.db.execute(
            "SELECT round FROM measurements WHERE candidate_id=? AND phase='confirm'", (candidate_id,)
        )
        return {int(r[0]) for r in rows.fetchall()}

    def confirmation_conditions(self, candidate_id: int) -> list[Conditions]:
        """The conditions of each confirmation round of a candidate, in round order (an interleaved round's
        telemetry carries its ``paired`` ratio against the shape's reference)."""
        rows = self.db.execute(
            "SELECT conditions FROM measurements WHERE candidate_id=? AND phase='confirm' ORDER BY round, id",
            (candidate_id,),
        ).fetchall()
        return [Conditions.from_dict(json.loads(r[0])) for r in rows]

    def paired_ratios(self, candidate_id: int) -> list[tuple[int, float]]:
        """Per interleaved confirmation round of a candidate, in round order: (the reference it was timed beside,
        the round's log ratio of its time over the reference's)."""
        found = []
        for conditions in self.confirmation_conditions(candidate_id):
            paired = (conditions.telemetry or {}).get("paired")
            if paired:
                found.append((int(paired["reference"]), float(paired["log_ratio"])))
        return found

    def record_pruned(self, run_id: str, shape: Shape, rejected: dict[str, int]) -> None:
        """How many configs each constraint removed before the search (the ledger's ``pruned`` rows)."""
        with self._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO pruned (run_id, shape_key, reason, count) VALUES (?,?,?,?)",
                [(run_id, shape.key, reason, count) for reason, count in rejected.items()],
            )

    def pruned_counts(self, run_id: str) -> dict[str, int]:
        """Configs removed by constraints before the search, per shape key."""
        rows = self.db.execute(
            "SELECT shape_key, SUM(count) FROM pruned WHERE run_id=? GROUP BY shape_key", (run_id,)
        ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def finished_keys(self, run_id: str) -> set[tuple[str, str, str, str]]:
        rows = self.db.execute(
            "SELECT shape_key, role, label, config_key FROM candidates WHERE run_id=? AND status != 'pending'",
            (run_id,),
        )
        return {(r[0], r[1], r[2], r[3]) for r in rows.fetchall()}

    def candidates(self, run_id: str) -> list[Candidate]:
        """Every candidate of a run with its (latest) measurement and gate verdict."""
        rows = self.db.execute("SELECT * FROM candidates WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        result = []
        for row in rows:
            cid = int(row["id"])
            result.append(
                Candidate(
                    shape=Shape.of(json.loads(row["shape"])),
                    config=Config.of(json.loads(row["config"])),
                    role=row["role"],
                    label=row["label"],
                    status=row["status"],
                    failure=FailureKind(row["failure"]) if row["failure"] else None,
                    reason=row["reason"],
                    compile_s=row["compile_s"],
                    binary_hash=row["binary_hash"],
                    resources=json.loads(row["resources"]),
                    measurement=self._measurement(cid),
                    confirmed=self._confirmed(cid),
                    verdict=self._verdict(cid),
                    id=cid,
                    gate_s=row["gate_s"],
                    measure_s=row["measure_s"],
                )
            )
        return result

    def measured_at(self, run_id: str) -> list[tuple[int, str, float, float]]:
        """Every search-phase measurement of a run in the order it was taken: (candidate id, shape key, median ms,
        unix time it was recorded) — a search trace's x axes (evaluations, seconds)."""
        rows = self.db.execute(
            "SELECT c.id, c.shape_key, m.median_ms, m.created FROM measurements m JOIN candidates c"
            " ON c.id = m.candidate_id WHERE c.run_id=? AND m.phase='search' ORDER BY m.created, m.id",
            (run_id,),
        )
        return [(int(r[0]), str(r[1]), float(r[2]), float(r[3])) for r in rows.fetchall()]

    def _confirmed(self, candidate_id: int) -> Measurement | None:
        rows = self.db.execute(
            "SELECT id, conditions FROM measurements WHERE candidate_id=? AND phase='confirm' ORDER BY round, id",
            (candidate_id,),
        ).fetchall()
        if not rows:
            return None
        samples = [
            r[0]
            for r in self.db.execute(
                "SELECT s.ms FROM samples s JOIN measurements m ON m.id = s.measurement_id"
                " WHERE m.candidate_id=? AND m.phase='confirm' ORDER BY m.round, m.id, s.seq",
                (candidate_id,),
            )
        ]
        conditions = Conditions.from_dict({**json.loads(rows[0]["conditions"]), "fresh_process": True})
        return Measurement(tuple(samples), conditions)

    def _measurement(self, candidate_id: int) -> Measurement | None:
        row = self.db.execute(
            "SELECT id, conditions, ci_low, ci_high FROM measurements WHERE candidate_id=?"
            " AND phase='search' ORDER BY id DESC LIMIT 1",
            (candidate_id,),
        ).fetchone()
        if row is None:
            return None
        samples = [
            r[0]
            for r in self.db.execute(
                "SELECT ms FROM samples WHERE measurement_id=? ORDER BY seq", (row["id"],)
            ).fetchall()
        ]
        ci = (row["ci_low"], row["ci_high"]) if row["ci_low"] is not None else None
        return Measurement(tuple(samples), Conditions.from_dict(json.loads(row["conditions"])), ci)

    def _verdict(self, candidate_id: int) -> Verdict | None:
        row = self.db.execute(
            "SELECT * FROM verdicts WHERE candidate_id=? AND kind='gate' ORDER BY id DESC LIMIT 1", (candidate_id,)
        ).fetchone()
        if row is None:
            return None
        return Verdict(
            row["kind"],
            row["outcome"],
            row["metric"],
            row["value"],
            row["threshold"],
            row["reason"],
            json.loads(row["details"]),
        )
