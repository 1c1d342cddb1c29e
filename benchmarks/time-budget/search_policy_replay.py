"""Search policies compared on recorded screens, without a GPU: how close a short search comes to the best config
of a longer one, when its proposals are answered from that longer run's own measurements.

A `kerntune tune` run's candidates (``benchmarks/export_candidates.py``'s CSV) hold every rung-0 screen it timed,
config by config. Per shape, the configs screened there are the space the replay searches, and each proposal is
answered with its recorded screening median — so two policies can be run on the same answers, for many seeds and
budgets, in seconds. Each policy runs as the race runs its inner strategy: proposals asked ``--lookahead`` ahead
of their results (the tuner keeps twice its compile workers in flight: 26 on the H200), ``--screens`` of them
timed. What a run found is the best recorded median among the configs it screened; its regret is that over the
best the recorded run screened.

Policies:
- ``rotate``: ``LocalSearch`` as the tuner runs it — after a random first round, one-parameter moves from the
  ``TOP`` best configs so far, the centre rotating with each proposal, every ``EXPLORE_EVERY``-th proposal random;
- ``best-first``: the same, but the best config's untried moves before the second best's (a greedy descent with
  the same random restarts).

Biases, stated: the recorded space is what one run of ``rotate`` chose to screen (the neighbourhoods of its good
configs, and its random draws), not the whole space; a median is one noisy screen, used both to steer and to
score. Read a difference between policies as a hint for a device A/B, not as a measured speed.

Usage: python benchmarks/time-budget/search_policy_replay.py CANDIDATES.csv [CANDIDATES.csv ...] [--screens 30,60,100]
       [--seeds 20] [--lookahead 26] [--explore N] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError
from kerntune.model import Config
from kerntune.search.local import TOP, LocalSearch
from kerntune.search.neighbourhood import one_parameter_moves

ROOT = Path(__file__).resolve().parents[2]


class BestFirst(LocalSearch):
    """``LocalSearch`` whose moves come from the best config so far until its neighbourhood is spent."""

    name = "best-first"

    def _move(self) -> Config | None:
        best = sorted(self._results, key=lambda k: self._results[k])[:TOP]
        turn = self._turn % len(self._names) if self._names else 0
        names = self._names[turn:] + self._names[:turn]
        for key in best:
            for name in names:
                for move in one_parameter_moves(self._by_key[key], self.configs, name):
                    if move.key not in self._asked:
                        return move
        return None


POLICIES: dict[str, type[LocalSearch]] = {"rotate": LocalSearch, "best-first": BestFirst}


def cell(text: str) -> dict[str, Any]:
    """A candidate CSV's shape or config cell (``M=256,layout='NT'``) as its fields, read by the CLI's ``--shape``
    parser and ``--config`` value rule (quotes dropped, numbers as numbers)."""
    from kerntune.cli.common import parse_shape
    from kerntune.tune.inputs import parse_value

    return {name: parse_value(value.strip("'"), name) for name, value in parse_shape(text).items()}


def recorded_screens(paths: Sequence[Path]) -> dict[str, dict[str, tuple[Config, float]]]:
    """Per shape, each config's rung-0 screening median (ms), from candidate CSVs (the first screen where a
    config was screened twice). A ValueError names a file that is not such a CSV."""
    found: dict[str, dict[str, tuple[Config, float]]] = {}
    for path in paths:
        with path.open() as handle:
            try:
                for row in csv.DictReader(handle):
                    if row["label"] != "rung 0" or row["status"] != "ok" or not row["median_ms"]:
                        continue
                    config = Config.of(cell(row["config"]))
                    found.setdefault(row["shape"], {}).setdefault(config.key, (config, float(row["median_ms"])))
            except (KeyError, ValueError, UsageError) as exc:
                raise ValueError(f"{path}: not a candidates CSV of export_candidates.py ({exc})") from exc
    return found


def replay(
    policy: type[LocalSearch],
    times: dict[str, tuple[Config, float]],
    first: Sequence[Config],
    seed: int,
    screens: int,
    lookahead: int,
    explore: int,
) -> float:
    """The best recorded median among the configs ``policy`` screens, ``screens`` of them, asked ``lookahead``
    ahead of their answers, the first ``explore`` at random (after the start and seeds)."""
    configs = [config for config, _ in times.values()]
    strategy = policy(configs, seed, first[0] if first else None, first[1:], explore=explore)
    window: deque[Config] = deque()
    seen: list[float] = []
    while len(seen) < screens:
        while len(window) < lookahead and (proposed := strategy.ask()) is not None:
            window.append(proposed)
        if not window:
            break
        config = window.popleft()
        median = times[config.key][1]
        strategy.tell(config, median)
        seen.append(median)
    return min(seen)


def seeds_and_explore(shape: str, shape_configs: dict[str, tuple[Config, float]]) -> tuple[list[Config], int]:
    """The example's start and seeds that the recorded space holds, in the tuner's order (default first), and the
    random round ``LocalSearch`` gives the shape's whole valid space on the H200 (not the recorded part of it)."""
    from kerntune.model import Shape, Target
    from kerntune.tune.spec import load_spec

    space = load_spec(ROOT / "kernels" / "triton_gemm").problem.space
    valid, _ = space.valid_configs(Shape.of(cell(shape)), Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132))
    return (
        [c for c in (space.default_config(), *space.seed_configs()) if c.key in shape_configs],
        LocalSearch(valid, 0)._explore,
    )  # the round the tuner's search gives that space


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidates", type=Path, nargs="+")
    parser.add_argument("--screens", default="30,60,100")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--lookahead", type=int, default=26)
    parser.add_argument(
        "--explore",
        type=int,
        default=0,
        help="the random round's length (0: what LocalSearch gives the shape's whole space)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    try:
        budgets = [int(x) for x in args.screens.split(",")]
    except ValueError:
        budgets = []
    if not budgets or min(budgets) < 1 or args.seeds < 1 or args.lookahead < 1 or args.explore < 0:
        print(
            "--screens is positive whole numbers, comma-separated; --seeds and --lookahead positive, --explore "
            "at least 0",
            file=sys.stderr,
        )
        return 2
    missing = [str(p) for p in args.candidates if not p.is_file()]
    if missing:
        print(f"no candidates file {missing[0]}", file=sys.stderr)
        return 2
    try:
        recorded = recorded_screens(args.candidates)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not recorded:
        print("no rung-0 screens in the candidates given (a race's CSV from export_candidates.py)", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for shape, times in recorded.items():
        best = min(median for _, median in times.values())
        first, explore = seeds_and_explore(shape, times)
        explore = args.explore or explore
        row: dict[str, Any] = {
            "shape": shape,
            "recorded": len(times),
            "best_ms": best,
            "explore": explore,
            "regret": {},
        }
        for name, policy in POLICIES.items():
            for budget in budgets:
                found = [
                    replay(policy, times, first, seed, budget, args.lookahead, explore) for seed in range(args.seeds)
                ]
                row["regret"][f"{name}@{budget}"] = statistics.mean(f / best - 1 for f in found)
        rows.append(row)
        print(
            f"{shape.split(',layout')[0]} ({len(times)} screened): "
            + "; ".join(
                f"{budget}: " + " / ".join(f"{row['regret'][f'{name}@{budget}'] * 100:.1f}%" for name in POLICIES)
                for budget in budgets
            ),
            flush=True,
        )
    summary = {key: statistics.mean(r["regret"][key] for r in rows) for key in rows[0]["regret"]}
    print(
        "mean regret over shapes ("
        + " / ".join(POLICIES)
        + "): "
        + "; ".join(
            f"{budget} screens " + " / ".join(f"{summary[f'{name}@{budget}'] * 100:.2f}%" for name in POLICIES)
            for budget in budgets
        )
    )
    if args.json:
        args.json.write_text(
            json.dumps({"rows": rows, "summary": summary, "seeds": args.seeds, "lookahead": args.lookahead}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
