"""The served-model suite's variants script without a GPU: the tables it derives (every call a miss, no TMA
entries) and the variants it runs, each a fresh process whose metric and serving stats it keeps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import benchmark_script, load_benchmark

variants = load_benchmark("served_variants")


def entry(m: int, tma: int) -> dict[str, object]:
    return {"key": {"op": "k", "M": m, "N": 64, "K": 64}, "config": {"TMA": tma}}


def test_the_misses_table_moves_every_m_past_the_tables_own(tmp_path: Path) -> None:
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"schema": 1, "entries": [entry(16, 0), entry(17, 1), entry(32, 0)]}))
    tables = variants._tables(table, tmp_path)
    moved = [e["key"]["M"] for e in json.loads(tables["misses"].read_text())["entries"]]
    assert len(moved) == 3 and not {16, 17, 32} & set(moved)  # M + 1 would have hit the entry at 17
    kept = json.loads(tables["no-tma"].read_text())["entries"]
    assert [e["key"]["M"] for e in kept] == [16, 32]


def test_no_tma_variant_where_the_table_has_no_tma_entry(tmp_path: Path) -> None:
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"schema": 1, "entries": [entry(16, 0)]}))
    assert "no-tma" not in variants._tables(table, tmp_path)


def test_each_variant_runs_and_a_slow_process_is_one_line(tmp_path: Path) -> None:
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"schema": 1, "entries": [entry(16, 0)]}))
    program = tmp_path / "app.py"
    program.write_text("print('2.5 ms per step')\n")
    script = [sys.executable, str(benchmark_script("served_variants")), "--table", str(table), "--rounds", "1"]
    out = tmp_path / "v.json"
    command = [*script, "--out", str(out), "--", sys.executable, str(program)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text())
    assert set(found["values"]) == {"plain", "off", "native", "python", "misses"}
    assert all(v == [2.5, 2.5] for v in found["values"].values())  # each variant in order, then reversed
    slow = subprocess.run(
        [*script, "--timeout", "0.5", "--", sys.executable, "-c", "import time; time.sleep(5)"],
        capture_output=True,
        text=True,
    )
    assert slow.returncode != 0 and "ran past 0.5 s" in slow.stderr and "Traceback" not in slow.stderr
