"""``kerntune train TUNING_RUN [TUNING_RUN ...] --table PATH``: a compact dispatch table from sweeps over many shapes.

Rules first, exact entries only where they pay. Shapes are grouped into segments along a few dimensions, each a
shape field or a derived one bucketed by powers of two: by default for a matmul (M, N, K) the output size ``M*N``
(one bucket per octave); for other shapes the product of their fields. Each segment's rule is the config of least
total regret (sum of log(time ÷ the shape's best)) over its training shapes, among the configs timed on the most
of them. Wider rules follow, dropping the last dimension at each level down to one rule for the whole op, so every
shape of the op gets a tuned config from its nearest populated segment. An exact entry is added only where a
shape's own winner beats the rule it would get by more than the noise band.

Why the output size: it sets how many output tiles there are to spread over the SMs, which decides the tile and
the split of K that win; K only lengthens each tile's loop. On the full 64-shape H200 sweep of 2026-11-29
(``benchmarks/table-quality/history.md``) held-out geometric-mean regret was 2.3% for ``M*N`` against 7.6% for
M × N*K × N/K and 14.2% for the aspect N/K × work size M*N*K the issue first named; every hold-out split (every 2nd to
5th shape) ranked them the same, and so did the earlier, separately measured 42-shape sweep (2.1% against 8.3%).
Shapes whose sweep was cut short (fewer than half the configs timed) are left out: their best would be the best
of a few.

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
from typing import Any, cast

from kerntune.deploy.artifacts import check_table_path, key_fields, require_timed, table_header, write_artifacts
from kerntune.errors import UsageError
from kerntune.model import Config, Run, Scalar
from kerntune.report.summary import build_report
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
    by: tuple[str, ...] = ()
    """Segment dimensions, most significant first: ``FIELD`` or ``FIELD:OCTAVES`` (a shape field, a ratio
    ``N/K`` or a product ``N*K``; one octave wide unless given). Default: see the module docstring."""


@dataclass
class ShapeTimes:
    """One shape of the sweep: its fields and, per config key, the best search-time median (ms)."""

    shape: dict[str, Scalar]
    times: dict[str, float] = field(default_factory=dict)
    run: str = ""
    """The run that timed it (the first, when several did)."""

    @property
    def best(self) -> tuple[str, float]:
        key = min(self.times, key=self.times.__getitem__)
        return key, self.times[key]

    def regret(self, config_key: str) -> float | None:
        """time ÷ best − 1 for a config timed on this shape, else None."""
        t = self.times.get(config_key)
        return None if t is None else t / self.best[1] - 1.0


def sweep(store: Store, run_refs: Iterable[str]) -> tuple[Run, list[ShapeTimes], dict[str, dict[str, Scalar]]]:
    """The runs' timed configs per shape (one op, kernel, dtype and device), and every config by key."""
    runs = [store.get_run(ref) for ref in run_refs]
    if not runs:
        raise UsageError("kerntune train needs at least one tuning run (a sweep over many shapes)")
    first = runs[0]
    fixed = _fixed_fields(first)
    by_shape: dict[str, ShapeTimes] = {}
    configs: dict[str, dict[str, Scalar]] = {}
    for run in runs:
        require_timed(run)
        if _fixed_fields(run) != fixed:
            raise UsageError(
                f"tuning run {run.id} differs from tuning run {first.id} in op, kernel source, dtype or device "
                f"({_fixed_fields(run)} vs {fixed}): train one table per op, kernel, dtype and device"
            )
        for report in build_report(store, run).shapes:
            times = by_shape.setdefault(report.shape.key, ShapeTimes(report.shape.as_dict(), run=run.id))
            for c in report.all_candidates:
                # The default config is timed as a baseline: it counts; baselines without a config (torch) do not.
                if c.status != "ok" or c.measurement is None or c.role == "screen" or not c.config.items:
                    continue
                key = c.config.key
                configs[key] = c.config.as_dict()
                times.times[key] = min(times.times.get(key, math.inf), c.measurement.median_ms)
    shapes = complete(list(by_shape.values()))
    if len(shapes) < 2:
        raise UsageError(
            f"the tuning runs hold {len(shapes)} shape(s) with timed configs: a table is trained from sweeps "
            "over many shapes (tune more shapes first)"
        )
    return first, shapes, configs


def complete(shapes: list[ShapeTimes]) -> list[ShapeTimes]:
    """The shapes with at least half as many timed configs as the best-covered one (a sweep cut short leaves a
    shape with a few configs, whose best would understate every regret)."""
    most = max((len(s.times) for s in shapes), default=0)
    return [s for s in shapes if s.times and 2 * len(s.times) >= most]


def _fixed_fields(run: Run) -> dict[str, Any]:
    """The fields every key of this run carries (op, kernel source, dtype, device): its key without a shape."""
    return key_fields(run, {})


Dim = tuple[str, float]
"""A segment dimension: the field (or derived field) and the bucket width in octaves."""


def dimensions(shapes: list[ShapeTimes], by: tuple[str, ...]) -> list[Dim]:
    """The segment dimensions from ``--by`` (or the defaults), checked against every shape."""
    names = [n for n, v in shapes[0].shape.items() if isinstance(v, (int, float))]
    if not by:
        by = (
            ("M*N",)
            if {"M", "N", "K"} <= set(names)
            else ("N/K", "N*K:2")
            if {"N", "K"} <= set(names)
            else ("*".join(names) + ":2",)
        )
    dims = []
    for text in by:
        name, _, width = text.partition(":")
        try:
            octaves = float(width) if width else 1.0
        except ValueError:
            raise UsageError(f"--by {text!r}: the width after ':' is a number of octaves, e.g. N*K:2") from None
        for s in shapes:
            value = field_value(name, s.shape)
            if not isinstance(value, (int, float)) or value <= 0:
                raise UsageError(
                    f"shape {s.shape} has no positive {name!r}: choose --by from its fields "
                    f"({', '.join(names)}), their ratios (N/K) or products (N*K)"
                )
        dims.append((name, octaves))
    return dims


def _bucket(value: float, width: float, centred: bool) -> tuple[float, float]:
    """The ``[low, high)`` range of powers of two that holds ``value``: width ``width`` octaves, centred on a
    power of two (ratios: 1 is its own bucket) or starting at one (sizes)."""
    log = math.log2(value) / width
    index = round(log) if centred else math.floor(log)
    low = (index - 0.5) if centred else index
    return 2.0 ** (low * width), 2.0 ** ((low + 1) * width)


def segment(s: ShapeTimes, dims: list[Dim]) -> tuple[tuple[float, float], ...]:
    return tuple(_bucket(float(field_value(name, s.shape)), width, "/" in name) for name, width in dims)


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


def _rules(
    train: list[ShapeTimes], fixed: Mapping[str, object], dims: list[Dim], configs: Mapping[str, dict[str, Scalar]]
) -> list[dict[str, Any]]:
    """Rules for every populated segment at every level (all dimensions, then all but the last, ... then none),
    most specific first: the first rule that matches a call is its nearest populated segment."""
    rules = []
    for level in range(len(dims), -1, -1):
        groups: dict[tuple[tuple[float, float], ...], list[ShapeTimes]] = defaultdict(list)
        for s in train:
            groups[segment(s, dims)[:level]].append(s)
        for buckets, members in sorted(groups.items()):
            when: dict[str, object] = {**fixed, **{name: list(b) for (name, _), b in zip(dims, buckets, strict=False)}}
            rules.append({"when": when, "config": configs[least_regret(members)], "trained_on": len(members)})
    return rules


def split(shapes: list[ShapeTimes], every: int) -> tuple[list[ShapeTimes], list[ShapeTimes]]:
    """Training and held-out shapes: every ``every``-th by work size (the product of the shape's numbers, from
    the middle of each stride)."""

    def work(s: ShapeTimes) -> float:
        return math.prod(float(v) for v in s.shape.values() if isinstance(v, (int, float)))

    ordered = sorted(shapes, key=lambda s: (work(s), repr(s.shape)))
    if every <= 1:
        return ordered, []
    held = [s for i, s in enumerate(ordered) if i % every == every // 2]
    return [s for s in ordered if s not in held], held


def score(
    table: dict[str, Any],
    fixed: Mapping[str, object],
    shapes: list[ShapeTimes],
    configs: Mapping[str, dict[str, Scalar]],
) -> dict[str, Any]:
    """What the live Dispatcher picks for each shape, and its regret there (None: that config was not timed)."""
    by_config = {repr(sorted(v.items())): k for k, v in configs.items()}
    live = Dispatcher(
        parse_table(table), key=lambda shape: shape, default={}, device=fixed, versions={}, settings=Settings()
    )
    rows: list[dict[str, Any]] = []
    for s in shapes:
        chosen = live.select(s.shape)
        key = by_config.get(
            repr(sorted(chosen.items())), Config.of(cast(dict[str, Scalar], chosen)).key if chosen else ""
        )
        rows.append({"shape": s.shape, "config": chosen, "best": configs[s.best[0]], "regret": s.regret(key)})
    stats = live.stats()
    scored: list[float] = [r["regret"] for r in rows if r["regret"] is not None]
    served = stats["exact"] + stats["rule"]
    return {
        "rows": rows,
        "calls": stats["calls"],
        "exact": stats["exact"],
        "rule": stats["rule"],
        "default": stats["default"],
        "coverage": served / stats["calls"] if rows else None,
        "geomean_regret": math.expm1(sum(map(math.log1p, scored)) / len(scored)) if scored else None,
        "max_regret": max(scored) if scored else None,
        "unscored": len(rows) - len(scored),
    }


def fit_table(
    shapes: list[ShapeTimes],
    configs: Mapping[str, dict[str, Scalar]],
    fixed: Mapping[str, object],
    header: Mapping[str, object],
    options: TrainOptions,
) -> dict[str, Any]:
    """Rules, exact entries and scores from a sweep's shapes: the table (``header`` plus entries and rules) and
    the report. Every key carries ``fixed`` (op, kernel source, dtype, device) and the shape."""
    dims = dimensions(shapes, options.by)
    fit, held = split(shapes, options.holdout_every)
    rules = _rules(fit, fixed, dims, configs)
    rule_only = {**header, "entries": [], "rules": rules}
    fitted = score(rule_only, fixed, fit, configs)
    entries = []
    for s, row in zip(fit, fitted["rows"], strict=True):
        if row["regret"] is None or row["regret"] > options.noise:
            best, best_ms = s.best
            entries.append(
                {
                    "key": {**fixed, **s.shape},
                    "config": configs[best],
                    "status": "measured",
                    "median_ms": best_ms,
                    "rule_regret": row["regret"],
                    "run": s.run,
                }
            )
    table = {
        **rule_only,
        "entries": entries,
        "training": {
            "by": [f"{n}:{w:g}" for n, w in dims],
            "noise": options.noise,
            "holdout_every": options.holdout_every,
        },
    }
    trained = score(table, fixed, fit, configs)
    report = {
        "shapes": len(shapes),
        "training_shapes": len(fit),
        "held_out_shapes": len(held),
        "configs": len(configs),
        "rules": len(rules),
        "exact_entries": len(entries),
        "exact_hit_rate": trained["exact"] / trained["calls"],
        "training_geomean_regret": trained["geomean_regret"],
        "held_out": score(table, fixed, held, configs) if held else None,
    }
    return {"table": table, "report": report}


def train(
    store: Store, run_refs: list[str], path: Path, options: TrainOptions, replace: bool = False
) -> dict[str, Any]:
    """Train, score and write the table (JSON, .py, .inc); the table and the report."""
    check_table_path(path)
    if path.exists() and not replace:
        raise UsageError(f"{path} exists: a trained table replaces a whole file; pass --replace, or name a new file")
    run, shapes, configs = sweep(store, run_refs)
    fitted = fit_table(shapes, configs, _fixed_fields(run), table_header(run), options)
    table = fitted["table"]
    table["training"]["runs"] = list(run_refs)
    return {**fitted, "written": write_artifacts(path, table)}
