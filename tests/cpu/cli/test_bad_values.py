"""Bad values, files and stores, each through the CLI in this process: one ``kerntune: error:`` line, exit 2, no
traceback, and the store intact (no NaN or infinity written, no run left ``running``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kerntune.errors import StoreError, UsageError
from kerntune.model import Budget, Space
from kerntune.store import Store
from kerntune.tune.inputs import corpus_shapes, resolve_shapes
from kerntune.tune.spec import load_spec
from tests.conftest import EXAMPLES, FAST_ENV
from tests.helpers.cli_inprocess import RUN_ID, Outcome, call, statuses, stored_run

NINES = "9" * 400
VECTOR_ADD = str(EXAMPLES / "opencl_vector_add")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store holding one finished run, named by KERNTUNE_HOME; the working folder is tmp_path (report writes)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KERNTUNE_HOME", str(tmp_path / "store"))
    stored_run(tmp_path / "store")
    return tmp_path / "store"


def one_line(result: Outcome, expected: str) -> None:
    assert result.code == 2, (result.code, result.stdout[-500:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.error_lines()
    assert len(lines) == 1 and expected in lines[0], result.stderr


VALUE_CASES = {
    "shape nan": (["tune", VECTOR_ADD, "--shape", "N=nan"], "--shape N='nan' is not a finite number"),
    "shape inf": (["tune", VECTOR_ADD, "--shape", "N=-inf"], "is not a finite number"),
    "shape fraction of an integer field": (["tune", VECTOR_ADD, "--shape", "N=4096.5"], "N is an integer"),
    "target-ms nan": (["tune", VECTOR_ADD, "--target-ms", "nan"], "--target-ms 'nan': give a finite number"),
    "target-ms inf": (["tune", VECTOR_ADD, "--target-ms", "inf"], "--target-ms 'inf': give a finite number"),
    "target-ms negative": (["tune", VECTOR_ADD, "--target-ms", "-1"], "at least 0"),
    "budget of 400 nines": (["tune", VECTOR_ADD, "--budget", NINES], "too large"),
    "infinite time budget": (["tune", VECTOR_ADD, "--budget", NINES + "s"], "too large"),
    "huge seed": (["tune", VECTOR_ADD, "--seed", "9" * 30], "--seed"),
    "negative seed": (["tune", VECTOR_ADD, "--seed", "-5"], "--seed '-5': give a whole number from 0"),
    "huge limit": (["runs", "--limit", NINES], "--limit"),
    "huge ledger limit": (["ledger", "--limit", "-1"], "--limit"),
    "floor band nan": (["floor", "check", "last", "--file", "f.txt", "--band", "nan"], "--band 'nan'"),
    "ab seed": (["ab", "x", "y", "--seed", "-1"], "--seed"),
    "ab processes": (["ab", "x", "y", "--processes", NINES], "--processes"),
    "top": (["tune", VECTOR_ADD, "--top", "-3"], "--top"),
    "settings nan": (["runs"], "KERNTUNE_WARMUP_MS='nan' is not a finite number"),
}


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_bad_value_is_one_line(name: str, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if name == "settings nan":
        monkeypatch.setenv("KERNTUNE_WARMUP_MS", "nan")
    args, expected = VALUE_CASES[name]
    one_line(call(args), expected)
    assert statuses(home) == ["done"]


def test_an_integral_float_shape_value_becomes_the_integer_a_table_keys_on() -> None:
    problem = load_spec(VECTOR_ADD).problem
    (shape,) = resolve_shapes(problem, [{"N": "4096.0"}])
    assert shape.as_dict()["N"] == 4096 and isinstance(shape.as_dict()["N"], int) and shape.key == "N=4096"


def test_budget_bounds() -> None:
    assert Budget.parse(["1000000000"]).evaluations == 1_000_000_000
    with pytest.raises(UsageError, match="too large"):
        Budget.parse(["1000000001s"])


def test_a_corpus_line_holding_inf_is_refused(tmp_path: Path) -> None:
    problem = load_spec(VECTOR_ADD).problem
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"op": problem.name, "shape": {"N": float("inf")}, "dtype": "float32", "calls": 1}))
    overrides = corpus_shapes(corpus, problem, "float32")
    with pytest.raises(UsageError, match="not a finite number"):
        resolve_shapes(problem, overrides)


FILE_CASES = {
    "binary shapes-from": (["tune", VECTOR_ADD, "--shapes-from", "{binary}"], "is not text"),
    "shapes-from count of 1e999": (["tune", VECTOR_ADD, "--shapes-from", "{huge_calls}"], "is not a shape corpus"),
    "binary migrate": (["migrate", "{binary}", "--to", "sm_90"], "is not a dispatch table"),
    "malformed migrate": (["migrate", "{json}", "--to", "sm_90"], "dispatch table"),
    "missing migrate": (["migrate", "{missing}", "--to", "sm_90"], "cannot read"),
    "binary import-kt": (["import-kt", "{binary}"], "is not a Kernel Tuner cache file (it is not text)"),
    "malformed import-kt": (["import-kt", "{json}"], "is not a Kernel Tuner cache file"),
    "NaN in import-kt": (["import-kt", "{nan_cache}"], "NaN"),
    "bad entry in import-kt": (["import-kt", "{bad_entry}"], "lacks a value of"),
    "zero time in import-kt": (["import-kt", "{zero_time}"], "not a positive number"),
    "missing import-kt": (["import-kt", "{missing}"], "cannot read"),
}


def _cache(entries: str) -> str:
    return (
        '{"device_name": "d", "kernel_name": "k", "problem_size": [4096], "tune_params_keys": ["LS"], '
        f'"cache": {{{entries}}}}}'
    )


@pytest.mark.parametrize("name", list(FILE_CASES))
def test_unreadable_file_is_one_line(name: str, home: Path, tmp_path: Path) -> None:
    files = {
        "binary": bytes(range(256)) * 8,
        "huge_calls": b'{"op": "vector_add", "shape": {"N": 4096}, "dtype": "float32", "calls": 1e999}\n',
        "json": b'{"entries": [1, 2], "schema": "x"}',
        "nan_cache": _cache('"64": {"LS": 64, "time": NaN, "times": [NaN, 1.0]}').encode(),
        "bad_entry": _cache('"64": {"time": 1.0, "times": [1.0]}').encode(),
        "zero_time": _cache('"64": {"LS": 64, "time": 0.0, "times": [0.0, 0.0]}').encode(),
    }
    paths = {name: tmp_path / name for name in files}
    for key, data in files.items():
        paths[key].write_bytes(data)
    paths["missing"] = tmp_path / "no-such-file"
    args, expected = FILE_CASES[name]
    one_line(call([a.format(**{k: str(v) for k, v in paths.items()}) for a in args]), expected)
    assert statuses(home) == ["done"]  # nothing half-imported


def _damage(home: Path, tables: tuple[str, ...]) -> None:
    """Overwrite the first page of each table with junk (the runs table left readable, as a torn write may)."""
    db = home / "kerntune.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        roots = dict(conn.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'table'").fetchall())
    data = bytearray(db.read_bytes())
    for table in tables:
        start = (roots[table] - 1) * size
        data[start : start + size] = b"\xde\xad" * (size // 2)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "args", [["show", "last"], ["show", "last", "--json"], ["report", "last"], ["deploy", "last", "--table", "t.json"]]
)
def test_a_damaged_store_is_one_line_naming_the_file(args: list[str], home: Path) -> None:
    _damage(home, ("candidates", "measurements", "samples", "verdicts"))
    result = call(args)
    one_line(result, f"the store {home / 'kerntune.sqlite'} is damaged")
    assert "move it aside" in result.stderr
    assert call(["runs"]).code == 0  # what is still readable stays readable


def test_resume_of_a_run_in_a_damaged_store_is_one_line(home: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    from kerntune.backends import load_backend

    digest = load_spec(VECTOR_ADD).digest
    target = json.dumps(load_backend("opencl", "").target().as_dict())  # the device the resumed worker meets
    with sqlite3.connect(home / "kerntune.sqlite") as conn:
        spec = str(EXAMPLES / "opencl_vector_add" / "spec.py")
        conn.execute(
            "UPDATE runs SET spec_path = ?, spec_hash = ?, target = ?, status = 'interrupted'", (spec, digest, target)
        )
    _damage(home, ("candidates", "measurements", "samples", "verdicts"))
    one_line(call(["tune", "--resume", RUN_ID]), "is damaged")
    assert "running" not in statuses(home)


def test_a_hand_edited_run_row_is_one_line(home: Path) -> None:
    with sqlite3.connect(home / "kerntune.sqlite") as conn:
        conn.execute("""UPDATE runs SET target = '{"backend": "opencl"}'""")
    for args in (["show", "last"], ["runs"], ["report", RUN_ID]):
        one_line(call(args), f"tuning run '{RUN_ID}' in {home / 'kerntune.sqlite'} is not a valid record")


def test_a_60000_character_run_id_is_one_line(home: Path) -> None:
    ref = "2" * 60_000
    for verb in ("show", "report"):
        result = call([verb, ref])
        one_line(result, "(60,000 characters)")
        assert len(result.stderr) < 500


def test_a_prefix_with_like_wildcards_matches_only_itself(home: Path) -> None:
    one_line(call(["show", "2026%"]), "no tuning run '2026%'")
    one_line(call(["show", "2026010_"]), "no tuning run")
    assert call(["show", "20260101"]).code == 0


def test_show_json_never_writes_infinity(home: Path) -> None:
    with sqlite3.connect(home / "kerntune.sqlite") as conn:  # as a store written before budgets were bounded
        conn.execute("""UPDATE runs SET budget = '{"evaluations": null, "seconds": 1e999, "shape_seconds": null}'""")
    result = call(["show", "last", "--json"])
    assert result.code == 0, result.stderr
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout
    json.loads(result.stdout, parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))


class _SmallDisk(Store):
    """A store on a disk that fills after a few pages: SQLite's own 'database or disk is full'."""

    def __init__(self, home: Path) -> None:
        super().__init__(home)
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        self.db.execute(f"PRAGMA max_page_count = {pages + 6}")


def test_a_full_disk_is_one_line_and_the_store_survives(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "big.json"
    entries = ", ".join(
        f'"{i}": {{"LS": {i}, "time": 1.5, "times": {[1.5 + j / 100 for j in range(40)]}}}' for i in range(400)
    )
    cache.write_text(_cache(entries))
    monkeypatch.setattr("kerntune.cli.common.Store", _SmallDisk)
    result = call(["import-kt", str(cache)])
    one_line(result, "is full")
    monkeypatch.undo()
    store = Store(home)  # the store opens, its finished run intact, the partial import marked
    assert store.get_run(RUN_ID).status == "done" and len(store.candidates(RUN_ID)) == 2
    assert "running" not in statuses(home)


QUICK_TUNE = {**FAST_ENV, "KERNTUNE_FINALISTS": "0", "KERNTUNE_REGIME": "warm"}
"""A tune of a few seconds: the search only (no confirmation rounds), warm timing."""


def _candidates(home: Path, run_id: str) -> list[str]:
    with sqlite3.connect(home / "kerntune.sqlite") as conn:
        return [r[0] for r in conn.execute("SELECT status FROM candidates WHERE run_id = ?", (run_id,))]


def test_a_full_disk_during_a_tune_is_one_line_and_the_run_resumes(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's disk fills partway through a tune's search (150 samples a candidate fill its few free pages):
    one line naming the full disk and what to do, the earlier run and the finished candidates kept, the run
    marked interrupted (never left running), and ``--resume`` finishes it once there is space."""
    pytest.importorskip("pyopencl")
    for name, value in {**QUICK_TUNE, "KERNTUNE_MIN_SAMPLES": "150", "KERNTUNE_MAX_SAMPLES": "150"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("kerntune.cli.common.Store", _SmallDisk)
    result = call(["tune", VECTOR_ADD, "--budget", "8", "--shape", "N=65536"])
    one_line(result, "is full")
    assert "free space, then resume with `kerntune tune --resume" in result.stderr
    monkeypatch.setattr("kerntune.cli.common.Store", Store)  # space freed
    store = Store(home)
    assert store.get_run(RUN_ID).status == "done" and len(store.candidates(RUN_ID)) == 2
    (run,) = [r for r in store.runs() if r.id != RUN_ID]
    assert run.status == "interrupted"
    kept = _candidates(home, run.id)
    assert kept.count("ok") >= 1 and set(kept) <= {"ok", "pending"} and kept.count("pending") <= 1, kept
    resumed = call(["tune", "--resume", run.id])
    assert resumed.code in (0, 1) and "Traceback" not in resumed.stderr, resumed.stderr[-2000:]
    after = _candidates(home, run.id)
    assert statuses(home) == ["done", "done"] and len(after) == 9 and "pending" not in after, after


class _FullAtStart(Store):
    """A store whose disk fills just after the new run's row is written: its first status write fails."""

    def update_run(
        self, run_id: str, *, status: str | None = None, stop_reason: str | None = None, elapsed_s: float | None = None
    ) -> None:
        if status == "running":
            raise sqlite3.OperationalError("database or disk is full")
        super().update_run(run_id, status=status, stop_reason=stop_reason, elapsed_s=elapsed_s)


def test_a_full_disk_as_a_tune_starts_leaves_no_run_running(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyopencl")
    for name, value in QUICK_TUNE.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("kerntune.cli.common.Store", _FullAtStart)
    one_line(call(["tune", VECTOR_ADD, "--budget", "2", "--shape", "N=65536"]), "is full")
    assert statuses(home) == ["done", "interrupted"]


def test_a_run_held_by_another_process_is_refused(tmp_path: Path) -> None:
    first, second = Store(tmp_path), Store(tmp_path)
    with (
        first.run_lock("r1"),
        pytest.raises(StoreError, match="being tuned by another kerntune process"),
        second.run_lock("r1"),
    ):
        pass
    with second.run_lock("r1"):  # released when the first process is done with it
        pass


def test_a_space_too_large_to_enumerate_is_refused_before_memory_fills() -> None:
    from kerntune.errors import SpecError
    from kerntune.model import Shape

    huge = Space(params={**{f"P{i}": list(range(20)) for i in range(10)}, "Q": [1, 2, 3, 4]})
    with pytest.raises(SpecError, match=r"40,960,000,000,000 configs .* KERNTUNE_MAX_CONFIGS"):
        huge.valid_configs(Shape.of({"N": 1}), None)
    small = Space(params={"A": list(range(30)), "B": list(range(30))})
    with pytest.raises(SpecError, match=r"about 100\.0% of them valid"):  # a sample refuses it at once
        small.valid_configs(Shape.of({"N": 1}), None, limit=100)
    with pytest.raises(SpecError, match="over 500 of them valid"):  # the sample's margin passes it to the walk
        small.valid_configs(Shape.of({"N": 1}), None, limit=500)
    assert len(small.valid_configs(Shape.of({"N": 1}), None, limit=900)[0]) == 900
    late = Space(params={"A": list(range(30)), "B": list(range(30))}, constraints=[lambda c: c["B"] > 40])
    with pytest.raises(SpecError, match="judging its constraints took over"):  # walks are bounded too
        late.valid_configs(Shape.of({"N": 1}), None, limit=100)


def test_a_constraint_or_derived_value_that_raises_names_itself_and_the_config() -> None:
    from kerntune.errors import SpecError
    from kerntune.model import Config, Constraint, Shape

    shape = Shape.of({"N": 1})
    space = Space(params={"A": [1, 2], "B": [0, 1]}, constraints=[Constraint(lambda c: c["A"] // c["B"] > 0, "ratio")])
    with pytest.raises(
        SpecError, match=r"the constraint 'ratio' raised ZeroDivisionError: .* at A=1, B=0 \(shape N=1\)"
    ):
        space.valid_configs(shape, None)
    with pytest.raises(SpecError, match="the constraint 'ratio' raised ZeroDivisionError"):
        space.check(Config.of({"A": 2, "B": 0}), shape, None)
    derived = Space(params={"A": [1, 2], "B": [0, 1]}, derived={"Q": lambda m: m["A"] / m["B"]})
    with pytest.raises(SpecError, match="the derived value 'Q' raised ZeroDivisionError"):
        derived.valid_configs(shape, None)
