"""What a tuning run and an A/B share before and around their workers: the worker entry points, shapes
from ``--shape`` overrides or a recorded corpus (``--shapes-from``), the kernel's source hash and the roofline
inputs a run records, each shape's valid configs (a shape the constraints empty is a spec error), the
measurement options from the settings (validated in the parent, so a bad regime or
mode is a usage error before any worker starts), the graph-mode check on a worker's setup, and the
evaluation time earlier runs of the spec on the device took (the plan's estimate under an evaluation budget).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from kerntune.errors import SpecError, UsageError
from kerntune.measure.calibrate import MAX_AGE_S, device_key
from kerntune.measure.protocol import MeasureOptions, MeasureOptionsRecord, mode_of, regime_of
from kerntune.model import Config, Problem, Run, Scalar, Shape, Target
from kerntune.model.roofline import CostRecord
from kerntune.model.run import RunOptions
from kerntune.runtime.corpus import CorpusError, CorpusLine, merge, read_corpus, top
from kerntune.runtime.keys import problem_source_hash
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.calibrations import latest_calibration

SETUP = "kerntune.tune.evaluate:setup"
EVALUATE = "kerntune.tune.evaluate:evaluate"
EVALUATE_PAIR = "kerntune.tune.evaluate:evaluate_pair"


def parse_value(text: str, name: str) -> Scalar:
    """An int, a float or the text itself. NaN and infinities are refused: they are no size, and the store's JSON
    cannot hold them."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        raise UsageError(f"{name}={text!r} is not a finite number: give a number such as 4096")
    return number


def shape_value(name: str, text: str, like: Scalar | None) -> Scalar:
    """A --shape field's value, typed like the spec's first shape's: a field the spec gives as a number takes a
    number, one it gives as an integer an integral number only (``4096.0`` is 4096; a table keyed by the float would
    never match a call)."""
    value = parse_value(text, f"--shape {name}")
    if isinstance(like, bool) or not isinstance(like, (int, float)):
        return value
    if isinstance(value, str) or (isinstance(like, int) and isinstance(value, float) and not value.is_integer()):
        kind = "an integer" if isinstance(like, int) else "a number"
        raise UsageError(f"--shape {name}={text!r}: this spec's {name} is {kind}, e.g. {like}")
    return int(value) if isinstance(like, int) else value


def resolve_shapes(problem: Problem, overrides: Sequence[Mapping[str, str]]) -> list[Shape]:
    """The spec's shapes, or each override merged over the spec's first shape; unknown fields are errors."""
    if not overrides:
        return [Shape.of(s) for s in problem.shapes]
    fields = problem.shape_fields()
    first = problem.shapes[0]
    shapes = []
    for override in overrides:
        unknown = [k for k in override if k not in fields]
        if unknown:
            raise UsageError(
                f"unknown shape field {unknown[0]!r} in --shape; this spec's shape fields are {', '.join(fields)}"
            )
        shapes.append(Shape.of({**first, **{k: shape_value(k, v, first.get(k)) for k, v in override.items()}}))
    return shapes


def roofline_inputs(problem: Problem, shapes: Sequence[Shape], dtype: str, store: Store, target: Target) -> RunOptions:
    """The spec's cost per shape and this device's latest calibration, kept with the run: the report's speed
    of light and the near-the-limit stopping rule read them (nothing when either is missing)."""
    if problem.cost is None:
        return {}
    costs: dict[str, CostRecord] = {}
    for shape in shapes:
        try:
            cost = problem.cost(shape.as_dict(), dtype)
            costs[shape.key] = {
                "flops": float(cost.flops),
                "bytes": float(cost.bytes),
                **({"matrix": str(cost.matrix)} if cost.matrix else {}),
            }
        except Exception as exc:
            raise SpecError(
                f"the spec's cost raised {type(exc).__name__}: {exc} at shape {shape.key}; fix the spec "
                "(cost(shape, dtype) returns kt.Cost(flops=..., bytes=...))"
            ) from exc
    ceilings = latest_calibration(store, device_key(target.as_dict()), MAX_AGE_S)
    return {"costs": costs, **({"ceilings": ceilings} if ceilings else {})}


def corpus_shapes(path: Path, problem: Problem, dtype: str, top_n: int = 0) -> list[dict[str, str]]:
    """The distinct shapes of this problem in a shape corpus (``kerntune.runtime.corpus``: what ``scope --corpus``
    or ``KERNTUNE_RECORD_UNTUNED`` wrote), as ``--shape`` overrides: lines of another op (neither the spec's name
    nor an operator its ``serve`` takes), of another kernel source (a table keyed by it would never engage), of
    another dtype or lacking a shape field are left out. Calls of one shape are summed; ``top_n`` keeps the shapes
    with the most device time, else all in first-seen order. A corpus leaving none is an error that counts what
    was left out and why."""
    try:
        lines = merge(read_corpus(path))
    except OSError as exc:
        raise UsageError(f"--shapes-from {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--shapes-from {path} is not text: give a shape corpus (JSON lines)") from None
    except CorpusError as exc:
        raise UsageError(f"--shapes-from {exc}") from None
    except (ValueError, OverflowError, TypeError) as exc:  # a field of the wrong type, a count of 1e999
        raise UsageError(f"--shapes-from {path} is not a shape corpus: {type(exc).__name__}: {exc}") from None
    fields, source = problem.shape_fields(), problem_source_hash(problem)
    ops = {problem.name, *(op.split(".")[0] for op in (problem.serve.ops if problem.serve else ()))}
    skipped: dict[str, int] = {}
    mine: dict[str, tuple[dict[str, str], CorpusLine]] = {}
    for line in lines:
        shape = line.shape_for(fields)
        why = (
            "another op"
            if line.op.split(".")[0] not in ops
            else "another kernel source"
            if source and line.source not in (None, source)
            else "another dtype"
            if (line.dtype or dtype) != dtype
            else "missing shape fields"
            if shape is None
            else ""
        )
        if why or shape is None:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        text = {f: str(shape[f]) for f in fields}
        key = json.dumps(text, sort_keys=True)
        was = mine.get(key)
        if was is None:
            mine[key] = (text, line)
        else:
            times = [t for t in (was[1].device_us, line.device_us) if t is not None]
            mine[key] = (
                text,
                replace(was[1], calls=was[1].calls + line.calls, device_us=sum(times) if times else None),
            )
    if not mine:
        left = ", ".join(f"{n} of {why}" for why, n in skipped.items()) or "no lines"
        raise UsageError(f"--shapes-from {path} has no shape of {problem.name} ({dtype}) to tune: {left}")
    chosen = [line for _, line in mine.values()]
    if top_n:
        chosen = top(chosen, top_n)
    by_identity = {id(line): text for text, line in mine.values()}
    return [by_identity[id(line)] for line in chosen]


def measure_options(settings: Settings) -> MeasureOptionsRecord:
    """The measurement protocol's options from the settings (validated here, in the parent, so a bad
    regime or mode is a usage error before any worker starts)."""
    return MeasureOptions(
        warmup_ms=settings.warmup_ms,
        min_samples=settings.min_samples,
        max_samples=settings.max_samples,
        budget_ms=settings.sample_budget_ms,
        ci_target=settings.ci_target,
        regime=regime_of(settings.regime),
        min_window_ms=settings.min_window_ms,
        mode=mode_of(settings.mode),
        second_timer=bool(settings.second_timer),
    ).record()


def require_graphs(settings: Settings, setup: Mapping[str, object]) -> None:
    """Graph mode asked of a backend that cannot capture graphs is a usage error, not N failed candidates."""
    if settings.mode == "graph" and not setup.get("graphs"):
        raise UsageError(
            f"the {setup.get('backend', '')} backend on this device has no graph mode "
            "(CUDA/HIP graphs): measure with KERNTUNE_MODE=eager"
        )


ValidSets = dict[str, tuple[list[Config], dict[str, int]]]
"""Per shape key: the valid configs and how many configs each constraint rejected."""


def valid_configs(
    problem: Problem, shape: Shape, target: Target, settings: Settings
) -> tuple[list[Config], dict[str, int]]:
    """The shape's valid configs and constraint rejections, within KERNTUNE_MAX_CONFIGS; a spec mistake the
    enumeration meets (a constraint that raises, a space too large) names the spec."""
    try:
        return problem.space.valid_configs(shape, target, settings.max_configs)
    except SpecError as exc:
        raise SpecError(f"spec {problem.name}: {exc}") from None


def check_space(problem: Problem, shapes: Sequence[Shape], target: Target, settings: Settings) -> ValidSets:
    """Every shape's valid configs (each shape must keep at least one), computed once for the whole run."""
    sets: ValidSets = {}
    for shape in shapes:
        valid, rejected = sets[shape.key] = valid_configs(problem, shape, target, settings)
        if not valid:
            why = ", ".join(f"{name} ({count})" for name, count in sorted(rejected.items(), key=lambda kv: -kv[1]))
            raise SpecError(
                f"the constraints exclude every one of the {problem.space.size} configs at shape {shape.key} "
                f"(rejected by: {why}); loosen the constraints or widen the parameter values"
            )
    return sets


def earlier_evaluation_s(store: Store, run: Run, target: Target, enough: int = 50) -> float | None:
    """The mean seconds one evaluation (compile, gate, measure) took in the latest earlier runs of this problem on
    this device, from their stored candidates; None without one."""
    seconds: list[float] = []
    for earlier in store.runs(limit=20):
        if earlier.id == run.id or earlier.problem != run.problem or earlier.target.label != target.label:
            continue
        seconds += [
            (c.compile_s or 0.0) + (c.gate_s or 0.0) + (c.measure_s or 0.0)
            for c in store.candidates(earlier.id)
            if c.status == "ok" and c.measure_s
        ]
        if len(seconds) >= enough:
            break
    return sum(seconds) / len(seconds) if seconds else None
