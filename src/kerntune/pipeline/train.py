"""``kerntune train RUN [RUN ...] --table PATH``: a compact dispatch table from sweeps over many shapes.

Rules first, exact entries only where they pay. Shapes are grouped by aspect-ratio bucket (``N/K``, one bucket
per power of two) × work-size segment (``M*N*K``, one segment per ``octaves`` powers of two); each segment's
rule is the config of least total regret (sum of log(time ÷ the shape's best)) over its training shapes, among
the configs timed on the most of them. Wider rules follow (one per aspect bucket, then one for the whole op),
so every shape of the op gets a tuned config. An exact entry is added only where a shape's own winner beats
the rule it would get by more than the noise band.

A share of the shapes (every ``holdout_every``-th by work size) is held out: the table is scored on them through
the live ``Dispatcher``, as regret against each held-out shape's best timed config. A held-out shape whose
chosen config was never timed there is reported unscored, never guessed. Regret is measured on the sweep's
search-time medians: every config of a shape was timed under the same protocol in the same run.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError
from kerntune.model import Config, Run
from kerntune.pipeline.deploy import check_table_path, key_fields, require_timed, table_header, write_artifacts
from kerntune.pipeline.report import build_report
from kerntune.runtime.dispatch import Dispatcher
from kerntune.runtime.table import field_value, parse_table
from kerntune.settings import Settings
from kerntune.store import Store


@dataclass(frozen=True)
class TrainOptions:
    holdout_every: int = 3
    """Every k-th shape (sorted by work) is held out for scoring; 0 holds none out."""
    noise: float = 0.02
    """An exact entry is kept only where the shape's winner beats its rule by more than this fraction."""
    aspect: str | None = None
    """The aspect field (default ``N/K`` when the shapes have N and K; empty: no aspect buckets)."""
    work: str | None = None
    """The work-size field (default: the product of the shape's numeric fields, e.g. ``M*N*K``)."""
    octaves: float = 2.0
    """Width of a work segment in powers of two."""


@dataclass
class ShapeTimes:
    """One shape of the sweep: its fields and, per config key, the best search-time median (ms)."""

    shape: dict[str, Any]
    times: dict[str, float] = field(default_factory=dict)

    @property
    def best(self) -> tuple[str, float]:
        key = min(self.times, key=self.times.__getitem__)
        return key, self.times[key]

    def regret(self, config_key: str) -> float | None:
        """time ÷ best − 1 for a config timed on this shape, else None."""
        t = self.times.get(config_key)
        return None if t is None else t / self.best[1] - 1.0


def sweep(store: Store, run_refs: Iterable[str]) -> tuple[Run, list[ShapeTimes], dict[str, dict[str, Any]]]:
    """The runs' timed configs per shape (one op, kernel, dtype and device), and every config by key."""
    runs = [store.get_run(ref) for ref in run_refs]
    if not runs:
        raise UsageError("kerntune train needs at least one run (a sweep over many shapes)")
    first = runs[0]
    fixed = _fixed_fields(first)
    by_shape: dict[str, ShapeTimes] = {}
    configs: dict[str, dict[str, Any]] = {}
    for run in runs:
        require_timed(run)
        if _fixed_fields(run) != fixed:
            raise UsageError(f"run {run.id} differs from run {first.id} in op, kernel source, dtype or device "
                             f"({_fixed_fields(run)} vs {fixed}): train one table per op, kernel, dtype and device")
        for report in build_report(store, run).shapes:
            times = by_shape.setdefault(report.shape.key, ShapeTimes(report.shape.as_dict()))
            for c in report.all_candidates:
                # The default config is timed as a baseline: it counts; baselines without a config (torch) do not.
                if c.status != "ok" or c.measurement is None or c.role == "screen" or not c.config.items:
                    continue
                key = c.config.key
                configs[key] = c.config.as_dict()
                times.times[key] = min(times.times.get(key, math.inf), c.measurement.median_ms)
    shapes = [s for s in by_shape.values() if s.times]
    if len(shapes) < 2:
        raise UsageError(f"the runs hold {len(shapes)} shape(s) with timed configs: a table is trained from sweeps "
                         "over many shapes (tune more shapes first)")
    return first, shapes, configs


def _fixed_fields(run: Run) -> dict[str, Any]:
    return key_fields(run, {})


def _fields(shapes: list[ShapeTimes], options: TrainOptions) -> tuple[str | None, str]:
    names = [n for n, v in shapes[0].shape.items() if isinstance(v, (int, float))]
    aspect = options.aspect if options.aspect is not None else ("N/K" if {"N", "K"} <= set(names) else None)
    work = options.work or "*".join(names)
    for s in shapes:
        for name in filter(None, (aspect, work)):
            value = field_value(name, s.shape) if "*" in name or "/" in name else s.shape.get(name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise UsageError(f"shape {s.shape} has no positive {name!r}: choose --aspect/--work from its fields "
                                 f"({', '.join(names)})")
    return aspect or None, work


def _bucket(value: float, width: float, centred: bool) -> tuple[float, float]:
    """The ``[low, high)`` range of powers of two that holds ``value``: width ``width`` octaves, centred on a
    power of two (aspect ratios: 1 is its own bucket) or starting at one (work sizes)."""
    log = math.log2(value) / width
    index = round(log) if centred else math.floor(log)
    low = (index - 0.5) if centred else index
    return 2.0 ** (low * width), 2.0 ** ((low + 1) * width)


def least_regret(shapes: list[ShapeTimes]) -> str:
    """The config with the least total log-regret over ``shapes``, among those timed on the most of them."""
    timed_on: dict[str, int] = defaultdict(int)
    for s in shapes:
        for key in s.times:
            timed_on[key] += 1
    most = max(timed_on.values())
    candidates = [k for k, n in timed_on.items() if n == most]

    def total(key: str) -> float:
        return sum(math.log1p(r) for s in shapes if (r := s.regret(key)) is not None)

    return min(candidates, key=lambda k: (total(k), k))


def _rules(train: list[ShapeTimes], fixed: Mapping[str, Any], aspect: str | None, work: str, octaves: float,
           configs: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Segment rules, then one per aspect bucket, then one for the whole op: first match wins."""
    def value(name: str, s: ShapeTimes) -> float:
        return float(field_value(name, s.shape))

    def rule(a: tuple[float, float] | None, w: tuple[float, float] | None, members: list[ShapeTimes]
             ) -> dict[str, Any]:
        when: dict[str, Any] = dict(fixed)
        if aspect and a is not None:
            when[aspect] = list(a)
        if w is not None:
            when[work] = list(w)
        return {"when": when, "config": configs[least_regret(members)], "trained_on": len(members)}

    segments: dict[tuple[Any, ...], list[ShapeTimes]] = defaultdict(list)
    buckets: dict[tuple[float, float], list[ShapeTimes]] = defaultdict(list)
    for s in train:
        a = _bucket(value(aspect, s), 1.0, True) if aspect else None
        segments[(a, _bucket(value(work, s), octaves, False))].append(s)
        if a is not None:
            buckets[a].append(s)
    rules = [rule(a, w, members) for (a, w), members in sorted(segments.items())]
    rules += [rule(a, None, members) for a, members in sorted(buckets.items())]
    return [*rules, rule(None, None, train)]


def split(shapes: list[ShapeTimes], work: str, every: int) -> tuple[list[ShapeTimes], list[ShapeTimes]]:
    """Training and held-out shapes: every ``every``-th by work size (from the middle of each stride)."""
    ordered = sorted(shapes, key=lambda s: (float(field_value(work, s.shape)), repr(s.shape)))
    if every <= 1:
        return ordered, []
    held = [s for i, s in enumerate(ordered) if i % every == every // 2]
    return [s for s in ordered if s not in held], held


def score(table: dict[str, Any], fixed: Mapping[str, Any], shapes: list[ShapeTimes],
          configs: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """What the live Dispatcher picks for each shape, and its regret there (None: that config was not timed)."""
    by_config = {repr(sorted(v.items())): k for k, v in configs.items()}
    live = Dispatcher(parse_table(table), key=lambda shape: shape, default={}, device=fixed, versions={},
                      settings=Settings())
    rows: list[dict[str, Any]] = []
    for s in shapes:
        chosen = live.select(s.shape)
        key = by_config.get(repr(sorted(chosen.items())), Config.of(chosen).key if chosen else "")
        rows.append({"shape": s.shape, "config": chosen, "best": configs[s.best[0]], "regret": s.regret(key)})
    stats = live.stats()
    scored: list[float] = [r["regret"] for r in rows if r["regret"] is not None]
    served = stats["exact"] + stats["rule"]
    return {"rows": rows, "calls": stats["calls"], "exact": stats["exact"], "rule": stats["rule"],
            "default": stats["default"], "coverage": served / stats["calls"] if rows else None,
            "geomean_regret": math.expm1(sum(map(math.log1p, scored)) / len(scored)) if scored else None,
            "max_regret": max(scored) if scored else None, "unscored": len(rows) - len(scored)}


def train(store: Store, run_refs: list[str], path: Path, options: TrainOptions, replace: bool = False
          ) -> dict[str, Any]:
    """Train, score and write the table (JSON, .py, .inc); the table and the report."""
    check_table_path(path)
    if path.exists() and not replace:
        raise UsageError(f"{path} exists: a trained table replaces a whole file; pass --replace, or name a new file")
    run, shapes, configs = sweep(store, run_refs)
    aspect, work = _fields(shapes, options)
    fit, held = split(shapes, work, options.holdout_every)
    fixed = _fixed_fields(run)
    rules = _rules(fit, fixed, aspect, work, options.octaves, configs)
    rule_only = {**table_header(run), "entries": [], "rules": rules}
    fitted = score(rule_only, fixed, fit, configs)
    entries = []
    for s, row in zip(fit, fitted["rows"], strict=True):
        if row["regret"] is None or row["regret"] > options.noise:
            best, best_ms = s.best
            entries.append({"key": key_fields(run, s.shape), "config": configs[best], "status": "measured",
                            "median_ms": best_ms, "rule_regret": row["regret"], "run": run.id})
    table = {**rule_only, "entries": entries,
             "training": {"runs": list(run_refs), "aspect": aspect, "work": work, "octaves": options.octaves,
                          "noise": options.noise, "holdout_every": options.holdout_every}}
    trained = score(table, fixed, fit, configs)
    held_out = score(table, fixed, held, configs) if held else None
    report = {"shapes": len(shapes), "training_shapes": len(fit), "held_out_shapes": len(held),
              "configs": len(configs), "rules": len(rules), "exact_entries": len(entries),
              "exact_hit_rate": trained["exact"] / trained["calls"], "training_geomean_regret":
              trained["geomean_regret"], "held_out": held_out}
    return {"table": table, "report": report, "written": write_artifacts(path, table)}
