"""A table is data anyone can edit: a Dispatcher trusts none of it. Every malformed table gives one warning and
the default config; an entry whose config the spec's space refuses at its key (LS=0, BLOCK_K past K) is never
applied, counted and named; a table tuned under another pyopencl is not applied."""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import kerntune as kt
from kerntune.runtime.dispatch import Dispatcher, live_versions
from kerntune.runtime.entry_check import config_problem
from kerntune.runtime.table import load_table
from kerntune.settings import Settings
from tests.conftest import EXAMPLES

DEFAULT = {"BLOCK_K": 32}
GOOD = {"schema": 1, "entries": [{"key": {"op": "mm", "K": 64}, "config": {"BLOCK_K": 64}}]}

MALFORMED: list[tuple[str, bytes]] = [
    ("binary bytes", bytes(range(256)) * 4),
    ("invalid JSON", b'{"schema": 1, "entries": [{"key": '),
    ("entries an int", json.dumps({"schema": 1, "entries": 5}).encode()),
    ("validators a list", json.dumps({**GOOD, "validators": ["triton", "3.6"]}).encode()),
    ("device a string", json.dumps({**GOOD, "device": "sm_90"}).encode()),
    ("rules an int", json.dumps({**GOOD, "rules": 7}).encode()),
    ("provenance a list", json.dumps({**GOOD, "provenance": [1]}).encode()),
    ("deep nesting", b"[" * 200_000 + b"]" * 200_000),
    ("deep nesting in an entry", b'{"schema": 1, "entries": [{"key": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"),
    ("a key field a list", json.dumps({"schema": 1, "entries": [{"key": {"K": [64]}, "config": {}}]}).encode()),
    ("a config value an object", json.dumps({"schema": 1, "entries": [{"key": {}, "config": {"B": {}}}]}).encode()),
    ("a status a list", json.dumps({"schema": 1, "entries": [{"key": {}, "config": {}, "status": []}]}).encode()),
    ("a rule's when a string", json.dumps({**GOOD, "rules": [{"when": "K", "config": {}}]}).encode()),
    ("a schema true", json.dumps({**GOOD, "schema": True}).encode()),
    ("not UTF-8", b'{"schema": 1, "entries": [], "provenance": {"by": "\xff\xfe"}}'),
]


@pytest.mark.parametrize(("what", "data"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_every_malformed_table_gives_one_warning_and_the_default(tmp_path: Path, what: str, data: bytes) -> None:
    path = tmp_path / "table.json"
    path.write_bytes(data)
    table, problem = load_table(path)
    assert problem is not None and str(path) in problem and not table.entries, what
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        d = Dispatcher(path, key=lambda k: {"op": "mm", "K": k}, default=DEFAULT, versions={}, settings=Settings())
        assert d.select(64) == DEFAULT and d.select(64) == DEFAULT
    assert len(seen) == 1 and "running the default config" in str(seen[0].message), [str(w.message) for w in seen]
    assert d.stats()["default"] == 2 and d.stats()["disabled"] == problem


def test_a_malformed_table_never_raises_where_warnings_are_errors(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "table.json"
    path.write_bytes(b"\x00\x01binary")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as PYTHONWARNINGS=error sets: kerntune's notice must not end the program
        d = Dispatcher(path, key=lambda k: {"K": k}, default=DEFAULT, versions={}, settings=Settings())
    assert d.select(1) == DEFAULT
    assert capsys.readouterr().err.count("running the default config") == 1


def _vector_add_space() -> kt.Space:
    found = importlib.util.spec_from_file_location("vector_add_spec", EXAMPLES / "opencl_vector_add" / "spec.py")
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    space: kt.Space = module.problem.space
    return space


def test_a_config_outside_the_space_is_never_passed_to_the_program(tmp_path: Path) -> None:
    device = {"arch": "cpu-pocl", "compute_units": 2, "device_name": "cpu"}
    entries = [
        {"key": {**device, "op": "vector_add", "N": n}, "config": config}
        for n, config in ((1024, {"LS": 0, "WPT": 1}), (2048, {"LS": 64, "WPT": 4}), (4096, {"LS": 64, "BOGUS": 1}))
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schema": 1, "entries": entries}))
    with pytest.warns(RuntimeWarning) as seen:
        d = Dispatcher(
            path,
            key=lambda n: (n,),
            key_fields=("N",),
            default={"LS": 64, "WPT": 1},
            device={**device, "op": "vector_add"},
            versions={},
            space=_vector_add_space(),
        )
    assert len(seen) == 1 and "2 entries break the spec's space" in str(seen[0].message)
    assert "LS=0 is not one of the space's values" in str(seen[0].message)
    default, tuned = {"LS": 64, "WPT": 1}, {"LS": 64, "WPT": 4}
    assert [d.select(n) for n in (1024, 2048, 4096)] == [default, tuned, default]
    stats = d.stats()
    assert (stats["exact"], stats["default"]) == (1, 2)  # rejected entries are counted misses
    assert sorted(why.split(" is ")[0] for why in stats["rejected"].values()) == ["BOGUS", "LS=0"]
    assert d.report()["rejected"] == stats["rejected"]  # what kerntune verify reads


def test_an_entry_its_constraints_reject_at_its_shape_is_never_applied(tmp_path: Path) -> None:
    space = kt.Space(
        params={"BLOCK_K": [32, 64, 128], "SPLIT_K": [1, 2, 4]},
        constraints=[kt.Constraint(lambda c, s: s["K"] % (c["BLOCK_K"] * c["SPLIT_K"]) == 0, "K divides")],
    )
    entries = [
        {"key": {"op": "mm", "K": 64}, "config": {"BLOCK_K": 128, "SPLIT_K": 1}},  # BLOCK_K=128 at K=64
        {"key": {"op": "mm", "K": 96}, "config": {"BLOCK_K": 32, "SPLIT_K": 4}},  # a SPLIT_K K=96 cannot take
        {"key": {"op": "mm", "K": 256}, "config": {"BLOCK_K": 64, "SPLIT_K": 4}},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schema": 1, "entries": entries, "rules": [{"when": {}, "config": {"BLOCK_K": 128}}]}))
    with pytest.warns(RuntimeWarning, match="K divides"):
        d = Dispatcher(path, key=lambda k: {"op": "mm", "K": k}, default=DEFAULT, versions={}, space=space)
    # K=64 and K=96: the entry is refused, and so is the rule (BLOCK_K=128, SPLIT_K unset raises): the default
    assert [d.select(k) for k in (64, 96, 256)] == [DEFAULT, DEFAULT, {"BLOCK_K": 64, "SPLIT_K": 4}]
    assert d.stats()["exact"] == 1 and d.stats()["default"] == 2
    rejected = d.stats()["rejected"]
    assert {'K=64;op="mm"', 'K=96;op="mm"', 'rule 0 at K=64;op="mm"'} <= set(rejected)
    assert config_problem(space, {"BLOCK_K": 128, "SPLIT_K": 1}, {"K": 64}) == "breaks the constraint 'K divides'"


def test_a_table_tuned_under_another_pyopencl_is_not_applied(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    assert "pyopencl" in live_versions() and live_versions()["pyopencl"] == sys.modules["pyopencl"].VERSION_TEXT
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**GOOD, "validators": {"pyopencl": "2019.1"}}))
    with pytest.warns(RuntimeWarning, match=r"pyopencl 2019\.1 \(this process: "):
        d = Dispatcher(path, key=lambda k: {"op": "mm", "K": k}, default=DEFAULT, settings=Settings())
    assert d.select(64) == DEFAULT and d.stats()["default"] == 1
