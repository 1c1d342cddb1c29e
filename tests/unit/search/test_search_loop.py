"""The search loop's decisions after a compile-ahead result, with a null tuner (a real store, no device):
a kernel that cannot launch is pruned with its reason, one whose binaries and grids were already timed is a
duplicate that inherits that time, anything else goes on to be timed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from kerntune.model import Config, Shape
from kerntune.search import make_strategy
from kerntune.search.shape_search import ShapeSearch, rung_options
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.ledger import PRUNED, ledger_rows
from tests.unit.isa.test_occupancy import SM90
from tests.unit.store.test_store import SHAPE, _run


class _NullProgress:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, str]] = []

    def finished(self, label: str, status: str, detail: str) -> None:
        self.lines.append((label, status, detail))


def test_pruned_and_duplicate_configs_are_recorded_not_timed(tmp_path: Path) -> None:
    store = Store(tmp_path)
    run = _run(store)
    configs = [Config.of({"X": i}) for i in range(4)]
    tuner = SimpleNamespace(settings=Settings(), store=store, run=run, progress=_NullProgress())
    search = ShapeSearch(
        tuner,
        Shape.of(SHAPE.as_dict()),
        make_strategy("exhaustive", configs, 0),
        None,  # type: ignore[arg-type]
        {},
        {},
    )
    search.signatures[("sig-a", "search", "")] = ("X=0", 0.5)
    fits = {"registers": 64, "num_warps": 4, "shared_bytes": 1024}

    assert search._skip(
        configs[1], "search", "", {"signature": "sig-a", "resources": fits, "limits": SM90, "compile_s": 0.2}
    ) == (0.5,)
    assert search._skip(
        configs[2],
        "search",
        "",
        {"signature": "sig-b", "limits": SM90, "compile_s": 0.3, "resources": {"shared_bytes": 300000, "num_warps": 4}},
    ) == (None,)
    assert search._skip(configs[3], "search", "", {"signature": "sig-c", "resources": fits, "limits": SM90}) is None
    # The same binary at another rung is measured again: a screening time is not a full measurement.
    assert search._skip(configs[1], "screen", "rung 0", {"signature": "sig-a", "resources": fits}) is None

    rows = {c.config.key: c for c in store.candidates(run.id)}
    assert rows["X=1"].status == "duplicate" and "same binaries and grids as X=0" in rows["X=1"].reason
    assert rows["X=2"].status == "pruned" and rows["X=2"].reason.startswith("cannot launch: needs 300000 B")
    assert rows["X=2"].compile_s == 0.3 and "X=3" not in rows
    (ledger,) = ledger_rows(store, kind=PRUNED)  # the ledger lists it, with why it was not timed
    assert ledger.candidate == "X=2" and ledger.reason.startswith("pruned after compiling: cannot launch: needs 300000")


def test_screening_rungs_shorten_the_protocol_and_loosen_its_interval() -> None:
    full = {"warmup_ms": 256.0, "budget_ms": 1600.0, "min_window_ms": 0.0, "ramp_limit_ms": 1000.0, "ci_target": 0.005}
    assert rung_options(full, None) == full
    first = rung_options(full, 0)
    assert (first["warmup_ms"], first["budget_ms"], first["ramp_limit_ms"]) == (16.0, 100.0, 62.5)
    assert first["ci_target"] == 0.02 and rung_options(full, 1)["ci_target"] == 0.01
    assert (first["block_ms"], rung_options(full, 1)["block_ms"]) == (0.625, 2.5)  # 10 ms blocks, by the rung


def test_a_register_bound_best_at_an_occupancy_step_stops_after_one_stale_round(tmp_path: Path) -> None:
    store = Store(tmp_path)
    tuner = SimpleNamespace(settings=Settings(), store=store, run=_run(store), progress=_NullProgress())
    configs = [Config.of({"X": i}) for i in range(4)]
    search = ShapeSearch(
        tuner,
        Shape.of(SHAPE.as_dict()),
        make_strategy("local", configs, 0),
        None,  # type: ignore[arg-type]
        {},
        {},
    )
    search.best_full = (0.5, {"registers": 130, "num_warps": 8}, SM90)  # 2 registers past the 2-block step
    assert search.register_boundary(stale_rounds=0) is None  # still improving: go on
    reason = search.register_boundary(stale_rounds=1)
    assert reason is not None and reason.startswith("register pressure at an occupancy boundary")
    assert "130 registers per thread, 1 block(s)" in reason and "2 fewer would allow 2" in reason
    search.best_full = (0.5, {"registers": 100, "num_warps": 8}, SM90)  # 20 registers from the next step
    assert search.register_boundary(stale_rounds=2) is None
