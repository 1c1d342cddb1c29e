"""The live dispatch path with in-memory and on-disk tables (no device): lookup order, per-call counting,
modes, validators, logging and the untuned-shape corpus, and bad tables that must not crash a program."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kerntune.runtime.corpus import CorpusLine, read_corpus
from kerntune.runtime.dispatch import Dispatcher, write_untuned
from kerntune.runtime.table import SCHEMA, Table, entry_key, load_table, parse_table
from kerntune.settings import Settings

DEVICE = {"arch": "sm_90", "compute_units": 132, "device_name": "NVIDIA H200"}
DEFAULT = {"BLOCK": 64}


def _table(**extra: Any) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "validators": {"triton": "3.6.0"},
        "device": DEVICE,
        "entries": [
            {"key": {**DEVICE, "op": "mm", "M": 16}, "config": {"BLOCK": 16}, "status": "admitted"},
            {"key": {**DEVICE, "op": "mm", "M": 128}, "config": {"BLOCK": 128}, "status": "measured"},
            {"key": {**DEVICE, "op": "mm", "M": 256}, "config": {"BLOCK": 256}, "status": "rejected"},
        ],
        "rules": [{"when": {"M": [512, 8192]}, "config": {"BLOCK": 512}}],
        **extra,
    }


def _dispatcher(data: dict[str, Any], tmp_path: Path, **kwargs: Any) -> Dispatcher:
    path = tmp_path / "table.json"
    path.write_text(json.dumps(data))
    settings = kwargs.pop("settings", Settings())
    return Dispatcher(
        path,
        key=lambda m: {"op": "mm", "M": m},
        default=DEFAULT,
        device=DEVICE,
        versions={"triton": "3.6.0"},
        settings=settings,
        **kwargs,
    )


def test_exact_then_rule_then_default_counted_per_call(tmp_path: Path) -> None:
    d = _dispatcher(_table(), tmp_path)
    assert [d.select(m)["BLOCK"] for m in (16, 16, 16, 128, 1024, 4, 256)] == [16, 16, 16, 128, 512, 64, 64]
    stats = d.stats()
    assert (stats["calls"], stats["exact"], stats["rule"], stats["default"]) == (7, 4, 1, 2)
    assert stats["hit_rate"] == pytest.approx(4 / 7)
    assert stats["missed_keys"] == {entry_key({**DEVICE, "op": "mm", "M": m}): 1 for m in (1024, 4, 256)}


def test_production_mode_applies_admitted_entries_only(tmp_path: Path) -> None:
    d = _dispatcher(_table(), tmp_path, mode="production")
    assert (d.select(16)["BLOCK"], d.select(128)["BLOCK"]) == (16, 64)


def test_a_table_tuned_under_other_versions_is_not_applied_and_says_why(tmp_path: Path) -> None:
    data = _table(validators={"triton": "3.5.0"})
    with pytest.warns(RuntimeWarning, match=r"tuned under triton 3.5.0 \(this process: 3.6.0\): not applied"):
        d = _dispatcher(data, tmp_path)
    assert d.select(16) == DEFAULT and d.stats()["default"] == 1 and d.stats()["exact"] == 0


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"schema": 1, "entries": [{"key": {"M": 1}, "conf', "not valid JSON"),
        (json.dumps({"schema": SCHEMA + 1, "entries": []}), "is newer than this kerntune reads"),
        (
            json.dumps({"schema": 1, "entries": [{"key": {"M": 1}, "config": {}}, {"key": {"M": 1}, "config": {}}]}),
            "have the same key",
        ),
        (json.dumps({"schema": 1, "entries": [{"key": {"M": 1}, "config": {}, "status": "great"}]}), "has status"),
        (json.dumps([1, 2]), "a table is a JSON object"),
    ],
)
def test_a_broken_table_falls_back_to_the_default_with_a_warning(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "table.json"
    path.write_text(text)
    table, problem = load_table(path)
    assert problem is not None and reason in problem and not table.entries
    with pytest.warns(RuntimeWarning, match="running the default config"):
        d = Dispatcher(path, key=lambda m: {"M": m}, default=DEFAULT, versions={}, settings=Settings())
    assert d.select(1) == DEFAULT


def test_first_decisions_are_logged_and_missed_keys_recorded_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "untuned.jsonl"
    d = _dispatcher(_table(), tmp_path, settings=Settings(log_dispatch=1, record_untuned=str(corpus)))
    for m in (16, 16, 4, 4, 4):
        d.select(m)
    logged = capsys.readouterr().err.splitlines()
    assert len(logged) == 2 and "-> exact" in logged[0] and "-> default" in logged[1]
    assert not corpus.exists()  # written at exit, with each missed key's calls
    write_untuned()
    assert read_corpus(corpus) == [CorpusLine(op="mm", shape={"M": 4}, calls=3, device=DEVICE)]
    write_untuned()  # idempotent: an exit hook run twice writes nothing twice
    assert len(read_corpus(corpus)) == 1


def test_keys_are_canonical_and_typed() -> None:
    assert entry_key({"M": 16, "dtype": "bf16"}) == entry_key({"dtype": "bf16", "M": 16}) == 'M=16;dtype="bf16"'
    assert entry_key({"M": 16}) != entry_key({"M": "16"})
    assert set(parse_table(_table()).entries) == {entry_key(e["key"]) for e in _table()["entries"]}


def test_the_runtime_imports_nothing_heavy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, kerntune.runtime; print(','.join(m for m in ('numpy', 'scipy', 'torch', 'triton', 'optuna',"
        " 'pyopencl', 'rich', 'typer', 'sqlite3') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == ""


def test_tuple_keys_name_their_fields_and_hit_the_same_entries(tmp_path: Path) -> None:
    path = tmp_path / "table.json"
    path.write_text(json.dumps(_table()))
    d = Dispatcher(
        path,
        key=lambda m: ("mm", m),
        key_fields=("op", "M"),
        default=DEFAULT,
        device=DEVICE,
        versions={"triton": "3.6.0"},
        settings=Settings(),
    )
    assert [d.select(m)["BLOCK"] for m in (16, 128, 1024, 4)] == [16, 128, 512, 64]
    assert d.stats()["exact"] == 2
    wrong = Dispatcher(
        path, key=lambda m: ("mm", m, 1), key_fields=("op", "M"), default=DEFAULT, versions={}, settings=Settings()
    )
    with pytest.raises(ValueError, match="gave 3 values for the 2 key_fields"):
        wrong.select(16)


def test_kernel_keys_carry_the_source_hash_so_an_edited_kernel_misses(tmp_path: Path) -> None:
    from kerntune.runtime.keys import kernel_hash

    def scale(x: float) -> float:
        return 2 * x

    def scale_edited(x: float) -> float:
        return 3 * x

    assert kernel_hash(scale) != kernel_hash(scale_edited) and len(kernel_hash(scale)) == 16
    assert kernel_hash("__kernel void f() {}") == kernel_hash("  __kernel void f() {}\n")

    class Wrapper:  # as triton.autotune wraps a JITFunction: the hash reads through .fn
        fn = scale

    assert kernel_hash(Wrapper()) == kernel_hash(scale)
    data = {
        "schema": SCHEMA,
        "entries": [{"key": {"op": "s", "n": 8, "source": kernel_hash(scale)}, "config": {"BLOCK": 8}}],
    }
    launched: list[dict[str, Any]] = []

    class Launchable:  # records what a launch would receive, as a JITFunction wrapper's [grid] would
        def __init__(self, fn: Any) -> None:
            self.fn = fn

        def __getitem__(self, grid: Any) -> Any:
            return lambda *args, **kwargs: launched.append(kwargs)

    for fn, want in ((scale, 8), (scale_edited, 64)):
        d = _dispatcher(data, tmp_path)
        d.key_fn = lambda n: {"op": "s", "n": n}
        d.fixed = {}
        d.kernel(Launchable(fn))[(1,)](8)
        assert launched[-1]["BLOCK"] == want


def test_an_atomically_written_table_is_readable_by_others_and_keeps_its_mode(tmp_path: Path) -> None:
    """mkstemp makes owner-only files: a table deployed by one user must still be read by the program's."""
    import stat

    from kerntune.runtime.table import write_atomically

    fresh = tmp_path / "t.json"
    mask = os.umask(0o022)
    try:
        write_atomically(fresh, "{}")
    finally:
        os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644 and fresh.read_text() == "{}"
    fresh.chmod(0o640)
    write_atomically(fresh, "[]")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640 and fresh.read_text() == "[]"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temporary left behind


def test_describe_says_what_a_call_selects_without_counting_it() -> None:
    table = Table(
        entries={
            entry_key({"op": "mm", "M": 16}): {"key": {"op": "mm", "M": 16}, "config": {"B": 64}, "status": "measured"}
        }
    )
    d = Dispatcher(table, key=lambda m: (m,), key_fields=("M",), default={"B": 32}, device={"op": "mm"}, versions={})
    hit, miss = d.describe(16), d.describe(8)
    assert (hit["kind"], hit["config"], hit["fields"]) == ("exact", {"B": 64}, {"op": "mm", "M": 16})
    assert (miss["kind"], miss["config"]) == ("default", {"B": 32})
    assert d.stats()["calls"] == 0
