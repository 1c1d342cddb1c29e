"""The benchmark runner: every suite names what it measures, its steps and what it needs, every step it names
exists, every suite folder holds its README and history beside its scripts, every raw-data folder and every suite
RESULTS.md quotes is a suite the runner runs, the raw data stays small, and a suite run here leaves its raw data
under <suite>/<date>/ with its log."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import ROOT

BENCH = ROOT / "benchmarks"
SUITES = sorted(p.parent.name for p in BENCH.glob("*/suite.sh"))


def _header(suite: str, field: str) -> str:
    text = (BENCH / suite / "suite.sh").read_text()
    found = re.search(rf"^# {field}: (.+)$", text, re.M)
    assert found, f"benchmarks/{suite}/suite.sh has no '# {field}:' line"
    return found.group(1)


def _runner(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BENCH / "run"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def test_every_suite_states_its_steps_and_defines_them() -> None:
    assert len(SUITES) >= 10
    for suite in SUITES:
        text = (BENCH / suite / "suite.sh").read_text()
        assert _header(suite, "needs") in ("gpu", "any"), suite
        assert _header(suite, "about")
        for step in _header(suite, "steps").split():
            assert re.search(rf"^step_{step.replace('-', '_')}\(\)", text, re.M), f"{suite}: no step_{step}"


def test_every_suite_folder_holds_its_readme_history_and_scripts() -> None:
    for suite in SUITES:
        readme = (BENCH / suite / "README.md").read_text()
        assert f"benchmarks/run {suite}" in readme, f"benchmarks/{suite}/README.md does not say how to run it"
        assert (BENCH / suite / "history.md").read_text().startswith("# "), suite
        for script in (BENCH / suite).glob("*.py"):
            assert script.name in readme, f"benchmarks/{suite}/README.md does not name {script.name}"
    loose = {p.name for p in BENCH.glob("*.py")}
    assert loose <= {"export_candidates.py", "unpack.py"}, f"scripts outside a suite folder: {loose}"
    assert {p.name for p in BENCH.iterdir() if p.is_dir()} <= set(SUITES) | {"data", "specs"}


def test_raw_data_stays_small_and_holds_no_backup_copies() -> None:
    files = [p for p in (BENCH / "data").rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 10 * 2**20
    assert not [p for p in files if re.search(r"\.~\d+~$", p.name)]


def test_unpack_gzips_large_files_and_never_overwrites(tmp_path: Path) -> None:
    made = tmp_path / "made" / "gemm" / "2026-01-02"
    made.mkdir(parents=True)
    (made / "big.json").write_text("x" * 5000)
    (made / "run.log").write_text("first")
    archives = tmp_path / "archives"
    archives.mkdir()
    subprocess.run(
        ["tar", "czf", str(archives / "gemm-2026-01-02.tgz"), "-C", str(tmp_path / "made"), "gemm"], check=True
    )
    data = tmp_path / "data"
    unpack = [sys.executable, str(BENCH / "unpack.py"), str(archives / "gemm-2026-01-02.tgz"), str(data)]
    assert subprocess.run(unpack, capture_output=True, text=True).returncode == 0
    dated = data / "gemm" / "2026-01-02"
    assert sorted(p.name for p in dated.iterdir()) == ["big.json.gz", "run.log"]
    assert gzip.decompress((dated / "big.json.gz").read_bytes()) == b"x" * 5000
    again = subprocess.run(unpack, capture_output=True, text=True)
    assert "0 files stored, 2 already there" in again.stdout, again.stdout
    (made / "run.log").write_text("second")
    subprocess.run(
        ["tar", "czf", str(archives / "gemm-2026-01-02.tgz"), "-C", str(tmp_path / "made"), "gemm"], check=True
    )
    subprocess.run(unpack, check=True, capture_output=True)
    assert (dated / "run.log").read_text() == "first" and (dated / "run-2.log").read_text() == "second"


def test_raw_data_and_results_name_only_suites_the_runner_runs() -> None:
    folders = {p.name for p in (BENCH / "data").iterdir() if p.is_dir()}
    assert folders and folders <= set(SUITES), folders - set(SUITES)
    for folder in (BENCH / "data").iterdir():
        for dated in folder.iterdir():
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", dated.name), dated
    results = (BENCH / "RESULTS.md").read_text()
    linked = set(re.findall(r"\]\(([a-z-]+)/history\.md\)", results))
    assert linked == set(SUITES), set(SUITES) ^ linked  # every suite's history is one link from the summary
    histories = "".join((BENCH / suite / "history.md").read_text() for suite in SUITES)
    quoted = set(re.findall(r"suite `([a-z-]+)`", histories))
    assert quoted and quoted <= set(SUITES), quoted - set(SUITES)
    assert set(re.findall(r"benchmarks/run ([a-z][a-z-]+)", results + histories)) <= set(SUITES)


def test_list_and_bad_names() -> None:
    listed = _runner("--list")
    assert listed.returncode == 0
    assert all(suite in listed.stdout for suite in SUITES)
    unknown = _runner("no-such-suite")
    assert unknown.returncode == 2 and "no suite 'no-such-suite'" in unknown.stderr
    assert _runner("--unpack", str(ROOT / "no-such-folder")).returncode == 2


def test_a_suite_run_keeps_its_raw_data_by_suite_and_date(tmp_path: Path) -> None:
    done = _runner("dispatch-cost", env={"KT_DATA": str(tmp_path), "W": str(tmp_path / "scratch")})
    assert done.returncode == 0, done.stdout + done.stderr
    dated = tmp_path / "dispatch-cost" / datetime.now(timezone.utc).strftime("%Y-%m-%d")
    assert '"dispatcher_select_tuple_key_us"' in (dated / "dispatch" / "dispatch_cost.json").read_text()
    log = (dated / "run.log").read_text()
    assert "== dispatch-cost" in log and "exit 0 after" in log
    again = _runner("dispatch-cost", env={"KT_DATA": str(tmp_path), "W": str(tmp_path / "scratch")})
    assert again.returncode == 0 and (dated / "dispatch-2" / "dispatch_cost.json").exists()  # never overwritten
    missing = _runner("dispatch-cost", env={"KT_DATA": str(tmp_path), "STEPS": "nope"})
    assert missing.returncode == 1 and "has no step 'nope'" in missing.stdout


def test_an_unbounded_run_splits_its_shapes_into_parts(tmp_path: Path) -> None:
    env = {"KT_DATA": str(tmp_path), "W": str(tmp_path / "scratch"), "STEPS": "unbounded", "PATH": "/usr/bin:/bin"}
    if shutil.which("nvidia-smi", path=env["PATH"]):
        pytest.skip("nvidia-smi is on the system path: the step would tune on the GPU, not skip")
    shapes = [
        line
        for line in (ROOT / "benchmarks" / "specs" / "llm_gemm_shapes.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    said = []
    for part in ("1/3", "2/3", "3/3"):
        done = _runner("time-budget", env={**env, "PART": part})
        assert done.returncode == 0, done.stdout + done.stderr
        said.append(next(line for line in done.stdout.splitlines() if f"part {part[0]} of 3:" in line))
    # every shape of the list in exactly one part, in order (PATH without nvidia-smi: the GPU run is skipped)
    assert " ".join(line.split(":", 1)[1] for line in said).split() == [s.strip() for s in shapes]
    assert "unbounded needs a GPU: skipped" in done.stdout
    for bad in ("4/3", "0/3", "x/3"):
        refused = _runner("time-budget", env={**env, "PART": bad})
        assert refused.returncode == 1 and "give i/n" in refused.stdout, refused.stdout
