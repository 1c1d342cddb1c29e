"""benchmarks/time-budget/search_policy_replay.py on made-up screens: the replay answers each proposal from the record,
is the same for a seed, finds the recorded best when it may screen everything, and its best-first policy spends the best
config's neighbourhood before the second best's; a record's cells read as the CLI reads them; a record it cannot
use is a one-line error and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kerntune.model import Config
from kerntune.search.local import EXPLORE_EVERY
from tests.conftest import benchmark_script, load_benchmark

replay = load_benchmark("search_policy_replay")
GRID = [Config.of({"A": a, "B": b, "C": c}) for a in range(6) for b in range(6) for c in range(3)]


def _times(config: Config) -> float:
    return 1.0 + abs(int(config["A"]) - 4) * 0.1 + abs(int(config["B"]) - 1) * 0.05 + int(config["C"]) * 0.01


RECORD = {c.key: (c, _times(c)) for c in GRID}


def test_the_replay_is_the_records_answers_and_repeats_for_a_seed() -> None:
    for policy in replay.POLICIES.values():
        found = replay.replay(policy, RECORD, [GRID[0]], seed=3, screens=20, lookahead=4, explore=8)
        assert found == replay.replay(policy, RECORD, [GRID[0]], seed=3, screens=20, lookahead=4, explore=8)
        assert found in {t for _, t in RECORD.values()}
        # screening the whole record finds its best
        assert replay.replay(policy, RECORD, [GRID[0]], seed=3, screens=len(GRID), lookahead=4, explore=8) == 1.0


def _moves_after_a_random_round(policy: type, count: int) -> tuple[Config, list[Config]]:
    """The best of a random round of four, and the next ``count`` one-parameter moves the policy proposes with no
    further result told (the proposals every EXPLORE_EVERY-th turn are random draws and left out)."""
    search = policy(GRID, 0, GRID[0], [], explore=4)
    for _ in range(4):
        config = search.ask()
        search.tell(config, _times(config))
    best = RECORD[min(search._results, key=lambda k: search._results[k])][0]
    moves: list[Config] = []
    while len(moves) < count:
        config = search.ask()
        if search._turn % EXPLORE_EVERY:
            moves.append(config)
    return best, moves


def _neighbour(a: Config, b: Config) -> bool:
    return sum(a[name] != b[name] for name in ("A", "B", "C")) == 1


def test_best_first_spends_the_best_configs_moves_before_the_second_bests() -> None:
    best, moves = _moves_after_a_random_round(replay.BestFirst, 8)  # of its 12 (A, B, C), 8 not yet asked
    assert all(_neighbour(best, m) for m in moves)
    best, moves = _moves_after_a_random_round(replay.LocalSearch, 8)  # rotating centres: other configs' moves too
    assert not all(_neighbour(best, m) for m in moves)


def test_a_record_without_screens_or_a_missing_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "candidates.csv"
    empty.write_text('id,shape,role,label,config,status,median_ms\n1,"M=1",search,,"A=1",ok,0.5\n')
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    for args, said in (
        ([str(empty)], "no rung-0 screens"),
        ([str(tmp_path / "none.csv")], "no candidates file"),
        ([str(other)], "not a candidates CSV"),
        ([str(empty), "--screens", "ten"], "--screens"),
        ([str(empty), "--explore", "-1"], "--explore"),
    ):
        done = subprocess.run(
            [sys.executable, str(benchmark_script("search_policy_replay")), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and said in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_records_cells_read_as_the_cli_reads_them() -> None:
    assert replay.cell("M=256,N=10240,layout='NT',bias=0") == {"M": 256, "N": 10240, "layout": "NT", "bias": 0}
