"""What a tuning run and an A/B share before and around their workers: the worker entry points, shapes
from ``--shape`` overrides or a recorded corpus (``--shapes-from``), the kernel's source hash and the roofline
inputs a run records, each shape's valid configs (a shape the constraints empty is a spec error), the
measurement options from the settings (validated in the parent, so a bad regime or
mode is a usage error before any worker starts), and the graph-mode check on a worker's setup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kerntune.errors import SpecError, UsageError
from kerntune.measure.calibrate import MAX_AGE_S, device_key
from kerntune.measure.protocol import MeasureOptions
from kerntune.model import Config, NativeKernel, OpenCLKernel, Problem, Scalar, Shape, Target
from kerntune.runtime.keys import kernel_hash
from kerntune.settings import Settings
from kerntune.store import Store
from kerntune.store.calibrations import latest_calibration

SETUP = "kerntune.tune.evaluate:setup"
EVALUATE = "kerntune.tune.evaluate:evaluate"
EVALUATE_PAIR = "kerntune.tune.evaluate:evaluate_pair"


def parse_value(text: str) -> Scalar:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def resolve_shapes(problem: Problem, overrides: Sequence[Mapping[str, str]]) -> list[Shape]:
    """The spec's shapes, or each override merged over the spec's first shape; unknown fields are errors."""
    if not overrides:
        return [Shape.of(s) for s in problem.shapes]
    fields = problem.shape_fields()
    shapes = []
    for override in overrides:
        unknown = [k for k in override if k not in fields]
        if unknown:
            raise UsageError(
                f"unknown shape field {unknown[0]!r} in --shape; this spec's shape fields are {', '.join(fields)}"
            )
        shapes.append(Shape.of({**problem.shapes[0], **{k: parse_value(v) for k, v in override.items()}}))
    return shapes


def source_hash(problem: Problem) -> str | None:
    """The source hash the live dispatcher keys by (``kerntune.runtime.keys``); None for kernels without one
    (torch ops)."""
    kernel = problem.kernel
    source = kernel.source if isinstance(kernel, (OpenCLKernel, NativeKernel)) else getattr(kernel, "fn", None)
    try:
        return kernel_hash(source) if source is not None else None
    except ValueError:
        return None


def roofline_inputs(problem: Problem, shapes: Sequence[Shape], dtype: str, store: Store,
                    target: Target) -> dict[str, Any]:
    """The spec's cost per shape and this device's latest calibration, kept with the run: the report's speed
    of light and the near-the-limit stopping rule read them (nothing when either is missing)."""
    if problem.cost is None:
        return {}
    costs = {}
    for shape in shapes:
        try:
            cost = problem.cost(shape.as_dict(), dtype)
            costs[shape.key] = {"flops": float(cost.flops), "bytes": float(cost.bytes),
                                **({"matrix": str(cost.matrix)} if cost.matrix else {})}
        except Exception as exc:
            raise SpecError(f"the spec's cost raised {type(exc).__name__}: {exc} at shape {shape.key}; fix the spec "
                            "(cost(shape, dtype) returns kt.Cost(flops=..., bytes=...))") from exc
    ceilings = latest_calibration(store, device_key(target.as_dict()), MAX_AGE_S)
    return {"costs": costs, **({"ceilings": ceilings} if ceilings else {})}


def corpus_shapes(path: Path, problem: Problem, dtype: str) -> list[dict[str, str]]:
    """The distinct shapes a live program recorded for this problem (``KERNTUNE_RECORD_UNTUNED=PATH``: one JSON
    line per missed key), as ``--shape`` overrides in first-seen order: lines of another op, of another kernel
    source (a table keyed by it would never engage) or of another dtype are left out, and a corpus leaving none is
    an error that counts what was left out and why."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise UsageError(f"--shapes-from {path}: {exc.strerror or exc}") from None
    fields, source, seen, shapes = problem.shape_fields(), source_hash(problem), set(), []
    skipped: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            key = json.loads(line)["key"]
        except (ValueError, KeyError, TypeError):
            raise UsageError(f"--shapes-from {path} line {number} is not a recorded key (JSON with a 'key' "
                             "object, as KERNTUNE_RECORD_UNTUNED writes)") from None
        why = ("another op" if key.get("op") != problem.name else
               "another kernel source" if source and key.get("source", source) != source else
               "another dtype" if key.get("dtype", dtype) != dtype else
               "missing shape fields" if any(f not in key for f in fields) else "")
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        shape = {f: str(key[f]) for f in fields}
        if tuple(shape.items()) not in seen:
            seen.add(tuple(shape.items()))
            shapes.append(shape)
    if not shapes:
        left = ", ".join(f"{n} of {why}" for why, n in skipped.items()) or "no lines"
        raise UsageError(f"--shapes-from {path} has no shape of {problem.name} ({dtype}) to tune: {left}")
    return shapes


def measure_options(settings: Settings) -> dict[str, Any]:
    """The measurement protocol's options from the settings (validated here, in the parent, so a bad
    regime or mode is a usage error before any worker starts)."""
    values: dict[str, Any] = dict(
        warmup_ms=settings.warmup_ms, min_samples=settings.min_samples, max_samples=settings.max_samples,
        budget_ms=settings.sample_budget_ms, ci_target=settings.ci_target, regime=settings.regime,
        min_window_ms=settings.min_window_ms, mode=settings.mode)
    return asdict(MeasureOptions(**values))


def require_graphs(settings: Settings, setup: Mapping[str, Any]) -> None:
    """Graph mode asked of a backend that cannot capture graphs is a usage error, not N failed candidates."""
    if settings.mode == "graph" and not setup.get("graphs"):
        raise UsageError(f"the {setup.get('backend', '')} backend on this device has no graph mode "
                         "(CUDA/HIP graphs): measure with KERNTUNE_MODE=eager")


ValidSets = dict[str, tuple[list[Config], dict[str, int]]]
"""Per shape key: the valid configs and how many configs each constraint rejected."""


def check_space(problem: Problem, shapes: Sequence[Shape], target: Target) -> ValidSets:
    """Every shape's valid configs (each shape must keep at least one), computed once for the whole run."""
    sets: ValidSets = {}
    for shape in shapes:
        valid, rejected = sets[shape.key] = problem.space.valid_configs(shape, target)
        if not valid:
            why = ", ".join(f"{name} ({count})" for name, count in sorted(rejected.items(), key=lambda kv: -kv[1]))
            raise SpecError(
                f"the constraints exclude every one of the {problem.space.size} configs at shape {shape.key} "
                f"(rejected by: {why}); loosen the constraints or widen the parameter values"
            )
    return sets
