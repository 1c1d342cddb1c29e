"""A bridge for Kernel Tuner users: ``kerntune import-kt CACHE.json`` and ``kerntune export-kt TUNING_RUN``.

Kernel Tuner's cache file (JSON) holds the device name, the kernel name, the problem size, the tunable
parameters and, per config, its objective ``time`` (the mean of ``iterations`` runs, 7 by default, in ms), the
raw ``times`` behind it, and compile, verification and benchmark times (ms). A run Kernel Tuner did not finish
leaves the file open (no closing braces); it is read as Kernel Tuner reads it. Configs that failed carry a
string instead of a time (``CompilationFailedConfig``, ``RuntimeFailedConfig``, ``InvalidConfig``).

Import: one run in the store (strategy ``import-kt``, its own Target: ``backend=kernel_tuner`` and the cache's
device name, so these times are never compared with kerntune's own), one candidate per config with every raw
sample kept: ``kerntune show`` then gives the median, the interval and the spread that a mean of 7 hides. The
problem size becomes the shape: ``x`` (and ``y``, ``z``), unless ``--shape`` names its fields.

Export: a kerntune run as a cache Kernel Tuner reads (``time`` is the mean of the raw samples, as Kernel Tuner
defines it; ``kerntune_median`` beside it is the figure kerntune ranks by).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError
from kerntune.model import Budget, Conditions, Config, FailureKind, Measurement, Run, Shape, Target
from kerntune.store import CandidateResult, Store

FAILED = {
    "CompilationFailedConfig": FailureKind.COMPILE,
    "RuntimeFailedConfig": FailureKind.CRASH,
    "InvalidConfig": FailureKind.ERROR,
}
REQUIRED = ("device_name", "kernel_name", "problem_size", "tune_params_keys", "cache")


def read_cache(path: Path) -> dict[str, Any]:
    """A Kernel Tuner cache file, complete or left open by a run that did not finish."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not a Kernel Tuner cache file (it is not text)") from None
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError:
        try:  # Kernel Tuner appends entries as it goes and closes the object at the end of a run
            data = json.loads(text.rstrip().rstrip(",") + "}}", parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{path} is not a Kernel Tuner cache file (not JSON: {exc.msg} at line {exc.lineno})"
            ) from None
    except ValueError as exc:
        raise UsageError(f"{path} is not a Kernel Tuner cache file this store can hold: {exc}") from None
    missing = [k for k in REQUIRED if not isinstance(data, dict) or k not in data]
    if missing:
        raise UsageError(f"{path} is not a Kernel Tuner cache file: no {', '.join(missing)}")
    problem = _malformed(data)
    if problem:
        raise UsageError(f"{path} is not a Kernel Tuner cache file: {problem}")
    return data  # type: ignore[no-any-return]


def _no_constant(name: str) -> Any:
    raise ValueError(f"it holds {name}, which is no time (the store keeps finite numbers only)")


def _malformed(data: dict[str, Any]) -> str:
    """What in a parsed cache file the import cannot take (checked before anything is written), or ''."""
    keys, cache, size = data["tune_params_keys"], data["cache"], data["problem_size"]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        return "tune_params_keys is not a list of names"
    sizes = size if isinstance(size, list) else [size]
    if not sizes or not all(isinstance(n, int) and not isinstance(n, bool) for n in sizes):
        return "problem_size is not an integer or a list of integers"
    if not isinstance(cache, dict):
        return "cache is not an object of entries"
    for name, entry in cache.items():
        if not isinstance(entry, dict) or any(not isinstance(entry.get(k), (int, float, str)) for k in keys):
            return f"cache entry {str(name)[:60]!r} lacks a value of {', '.join(keys)}"
        times = entry.get("times")
        if times is not None and not isinstance(times, list):
            return f"cache entry {str(name)[:60]!r}: times is not a list"
        numbers = [t for t in times or [] if isinstance(t, (int, float))]
        if any(not 0 < t < 1e300 for t in numbers):  # a spread divides by the least; float() of 10**400 overflows
            return f"cache entry {str(name)[:60]!r}: a time is not a positive number of milliseconds"
        if numbers and not isinstance(entry.get("time"), (int, float, str)):
            return f"cache entry {str(name)[:60]!r}: time is neither a number nor a failure's name"
        for field in ("compile_time", "verification_time", "benchmark_time"):
            if not isinstance(entry.get(field) or 0, (int, float)):
                return f"cache entry {str(name)[:60]!r}: {field} is not a number"
    return ""


def _shape(problem_size: Any, names: list[str] | None) -> dict[str, Any]:
    sizes = list(problem_size) if isinstance(problem_size, (list, tuple)) else [problem_size]
    names = names or ["x", "y", "z"][: len(sizes)]
    if len(names) != len(sizes):
        raise UsageError(
            f"the cache's problem size {problem_size} has {len(sizes)} dimensions; --shape names "
            f"{len(names)} ({', '.join(names)})"
        )
    return dict(zip(names, sizes, strict=True))


def import_cache(store: Store, path: Path, shape_names: list[str] | None = None) -> dict[str, Any]:
    """Store the cache as one run; a summary with the spread of each config's samples."""
    data = read_cache(path)
    keys = list(data["tune_params_keys"])
    shape = Shape.of(_shape(data["problem_size"], shape_names))
    target = Target(
        "kernel_tuner",
        "",
        str(data["device_name"]).strip().lower().replace(" ", "-"),
        str(data["device_name"]),
        0,
        (("kernel_tuner_cache", path.name),),
    )
    run = Run(
        id=f"kt-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{hashlib.md5(str(path).encode()).hexdigest()[:4]}",
        problem=str(data["kernel_name"]),
        spec_path=str(path),
        spec_hash=hashlib.sha256(path.read_bytes()).hexdigest()[:16],
        target=target,
        strategy="import-kt",
        budget=Budget(),
        shapes=(shape,),
        dtype="",
        seed=0,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        options={
            "imported_from": "kernel_tuner",
            "objective": data.get("objective"),
            "tune_params": data.get("tune_params"),
            "tune_params_keys": keys,
        },
    )
    store.create_run(run)
    conditions = Conditions(timer="kernel_tuner", regime="warm")
    rows: list[dict[str, Any]] = []
    try:
        for entry in data["cache"].values():
            config = Config.of({k: entry[k] for k in keys})
            cid = store.start_candidate(run.id, shape, config, "search", "")
            time = entry.get("time")
            samples = [float(t) for t in entry.get("times") or [] if isinstance(t, (int, float))]
            if isinstance(time, str) or not samples:
                failure = FAILED.get(str(time), FailureKind.ERROR)
                store.finish_candidate(cid, CandidateResult("failed", failure=failure, reason=f"Kernel Tuner: {time}"))
                rows.append({"config": config.key, "status": "failed", "reason": str(time)})
                continue
            m = Measurement(samples_ms=tuple(samples), conditions=conditions)
            store.finish_candidate(
                cid,
                CandidateResult(
                    "ok",
                    compile_s=float(entry.get("compile_time") or 0) / 1e3,
                    measurement=m,
                    gate_s=float(entry.get("verification_time") or 0) / 1e3,
                    measure_s=float(entry.get("benchmark_time") or 0) / 1e3,
                ),
            )
            rows.append(
                {
                    "config": config.key,
                    "status": "ok",
                    "kt_time_ms": time,
                    "median_ms": m.median_ms,
                    "min_ms": m.min_ms,
                    "max_ms": m.max_ms,
                    "samples": m.n,
                    "spread": m.max_ms / m.min_ms - 1,
                }
            )
    except BaseException:  # a full disk, Ctrl-C: the partial import is marked, never left `running`
        with contextlib.suppress(Exception):
            store.update_run(run.id, status="failed", stop_reason="the import stopped part way")
        raise
    store.update_run(run.id, status="done", stop_reason=f"imported from Kernel Tuner cache {path.name}")
    timed = [r for r in rows if r["status"] == "ok"]
    by_mean = min(timed, key=lambda r: r["kt_time_ms"]) if timed else None
    by_median = min(timed, key=lambda r: r["median_ms"]) if timed else None
    return {
        "run": run.id,
        "kernel": run.problem,
        "device": target.device_name,
        "shape": shape.as_dict(),
        "configs": len(rows),
        "failed": len(rows) - len(timed),
        "best_by_kt_mean": by_mean,
        "best_by_median": by_median,
        "rows": rows,
    }


def export_run(store: Store, run_ref: str, out: Path) -> dict[str, Any]:
    """Write a run's configs as a Kernel Tuner cache file; what was written."""
    run = store.get_run(run_ref)
    if len(run.shapes) != 1:
        raise UsageError(
            f"tuning run {run.id} has {len(run.shapes)} shapes; a Kernel Tuner cache holds one problem size: "
            "export a tuning run of one shape"
        )
    shape = run.shapes[0].as_dict()
    cache: dict[str, Any] = {}
    keys: list[str] = list(run.options.get("tune_params_keys") or [])
    # Search candidates, and the default config timed as a baseline (baselines without a config are not configs).
    candidates = sorted(store.candidates(run.id), key=lambda c: c.role != "search")
    for c in candidates:
        if c.role == "screen" or not c.config.items or c.status not in ("ok", "failed"):
            continue
        params = c.config.as_dict()
        keys = keys or list(params)
        entry: dict[str, Any] = {k: params.get(k) for k in keys}
        m = c.measurement
        if c.status == "ok" and m is not None:
            entry.update(time=statistics.fmean(m.samples_ms), times=list(m.samples_ms), kerntune_median=m.median_ms)
        else:
            entry.update(
                time="CompilationFailedConfig" if c.failure == FailureKind.COMPILE else "RuntimeFailedConfig", times=[]
            )
        entry.update(
            compile_time=(c.compile_s or 0) * 1e3,
            verification_time=(c.gate_s or 0) * 1e3,
            benchmark_time=(c.measure_s or 0) * 1e3,
            timestamp=run.created,
        )
        cache.setdefault(",".join(str(entry[k]) for k in keys), entry)
    if not cache:
        raise UsageError(f"tuning run {run.id} has no finished search candidate to export")
    values = list(shape.values())
    data = {
        "device_name": run.target.device_name,
        "kernel_name": run.problem,
        "problem_size": values[0] if len(values) == 1 else values,
        "tune_params_keys": keys,
        "tune_params": run.options.get("tune_params")
        or {k: sorted({e[k] for e in cache.values()}, key=str) for k in keys},
        "objective": run.options.get("objective") or ["time"],
        "cache": cache,
    }
    out.write_text(json.dumps(data, indent=1))
    return {"run": run.id, "configs": len(cache), "written": str(out)}
