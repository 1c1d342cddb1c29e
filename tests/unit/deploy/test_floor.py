from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kerntune.deploy.floors import check_floors, floor_key, read_floors, write_floors
from kerntune.errors import UsageError
from kerntune.model import Budget, Conditions, Config, Measurement, Run, Shape, Target
from kerntune.report.summary import RunReport, build_report
from kerntune.store import CandidateResult, Store

TARGET = Target("null", "none", "null-arch", "null device", 1)
SHAPE = Shape.of({"N": 16})


_stores = itertools.count()


def _report(tmp_path: Path, winner_ms: float) -> RunReport:
    store = Store(tmp_path / f"store-{next(_stores)}")
    run = Run(
        id="20260101-000000-abcd",
        problem="p",
        spec_path="/x",
        spec_hash="h",
        target=TARGET,
        strategy="exhaustive",
        budget=Budget(),
        shapes=(SHAPE,),
        dtype="float32",
        seed=0,
        created="x",
    )
    store.create_run(run)
    cid = store.start_candidate(run.id, SHAPE, Config.of({"B": 1}), "search", "")
    store.finish_candidate(cid, CandidateResult("ok", measurement=Measurement((winner_ms,) * 5, Conditions("t"))))
    return build_report(store, store.get_run(run.id))


def test_record_then_check(tmp_path: Path) -> None:
    path = tmp_path / "floors" / "null-arch.txt"
    floors = write_floors(path, _report(tmp_path, 2.0))
    key = floor_key("p", "float32", SHAPE.key)
    assert floors == {key: 2.0} and read_floors(path, "null-arch") == {key: 2.0}
    assert "# arch: null-arch" in path.read_text()
    verdicts = {ms: check_floors(floors, _report(tmp_path, ms))[0].verdict for ms in (2.0, 2.08, 2.2, 1.9)}
    assert verdicts == {2.0: "PASS", 2.08: "PASS", 2.2: "FAIL", 1.9: "FAST"}


def test_floors_are_per_arch_and_well_formed(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    write_floors(path, _report(tmp_path, 1.0))
    with pytest.raises(UsageError, match="floors are per arch"):
        read_floors(path, "sm_90")
    path.write_text("# arch: null-arch\nkey = fast\n")
    with pytest.raises(UsageError, match="expected `key = milliseconds`"):
        read_floors(path, "null-arch")
    with pytest.raises(UsageError, match="does not exist"):
        read_floors(tmp_path / "missing.txt", "null-arch")


def test_missing_keys_are_reported_not_passed(tmp_path: Path) -> None:
    checks = check_floors({"other|float32|N=1": 1.0}, _report(tmp_path, 1.0))
    assert sorted(c.verdict for c in checks) == ["NO-FLOOR", "NOT-MEASURED"]


def test_floors_refuse_a_run_measured_under_other_conditions(tmp_path: Path) -> None:
    from kerntune.deploy.floors import run_conditions

    path = tmp_path / "null-arch.txt"
    write_floors(path, _report(tmp_path, 2.0))
    report = _report(tmp_path, 2.0)
    assert "regime=cold" in path.read_text()
    assert read_floors(path, "null-arch", run_conditions(report))  # equal conditions: compared
    with pytest.raises(UsageError, match="equal conditions"):
        read_floors(path, "null-arch", "timer=t regime=warm mode=eager fresh_process=False")


def _paired(report: RunReport, ratio: float) -> RunReport:
    """The report as if confirmation had timed the winner interleaved beside a library baseline."""
    from dataclasses import replace

    from kerntune.measure.stats import RatioEstimate

    shape = report.shapes[0]
    assert shape.winner is not None and shape.winner.id is not None
    reference = replace(shape.winner, id=shape.winner.id + 100, role="baseline", label="torch.matmul")
    paired = replace(
        shape, interleaved={shape.winner.id: RatioEstimate(ratio, ratio * 0.99, ratio * 1.01, 3)}, reference=reference
    )
    return replace(report, shapes=[paired])


def test_a_floor_timed_interleaved_is_checked_as_a_ratio_not_a_median(tmp_path: Path) -> None:
    path = tmp_path / "null-arch.txt"
    floors = write_floors(path, _paired(_report(tmp_path, 2.0), 0.90))
    key = floor_key("p", "float32", SHAPE.key)
    assert floors == {key: 2.0, f"{key}@ratio:torch.matmul": 0.90} and read_floors(path, "null-arch") == floors
    # A slower clock day: every median 10% up, the winner still 0.90 of the library beside it — PASS, not FAIL.
    (check,) = check_floors(floors, _paired(_report(tmp_path, 2.2), 0.90))
    assert check.verdict == "PASS" and check.unit == "ratio to torch.matmul" and check.measured_ms == 0.90
    (check,) = check_floors(floors, _paired(_report(tmp_path, 2.0), 0.99))  # same median, lost ground: FAIL
    assert check.verdict == "FAIL"
    (check,) = check_floors(floors, _report(tmp_path, 2.2))  # the run has no interleaved ratio: by median
    assert check.verdict == "FAIL" and check.unit == "ms"
