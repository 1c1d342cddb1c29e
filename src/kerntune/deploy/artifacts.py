"""``kerntune deploy TUNING_RUN --table PATH``: a run's gated winners into the dispatch table the live code reads.

Three artifacts, each written atomically: ``PATH`` (JSON, read by ``kerntune.runtime``), ``PATH`` with
``.py`` (a Python module holding the same table as ``TABLE``) and ``.inc`` (a C header: entries sorted by key
for ``bsearch`` with ``strcmp``). Each carries a provenance header (run, device, versions, date). An existing
table is merged (a new winner replaces the entry of the same key); one that cannot be read is refused, never
overwritten.
"""

from __future__ import annotations

import json
import pprint
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerntune import __version__
from kerntune.deploy.rank import rank_specs
from kerntune.errors import UsageError
from kerntune.model import Run
from kerntune.report.summary import RunReport, ShapeReport, build_report
from kerntune.runtime.table import SCHEMA, TableError, entry_key, parse_table, write_atomically
from kerntune.store import Store

VALIDATORS = ("driver", "cuda", "hip", "triton", "torch", "opencl", "pyopencl", "vulkan")
"""The versions a backend records for a run that a table is valid under (OpenCL: its version, driver and
pyopencl; Vulkan: its API version and driver; CUDA and HIP: the toolkit, driver, torch and Triton)."""


def key_fields(report: RunReport | Run, shape: dict[str, Any]) -> dict[str, Any]:
    """Every field of a live call that can change the winner: op, kernel source, dtype, shape, device. The
    source is the kernel's hash as the runtime computes it (``kerntune.runtime.keys``); runs without one (torch
    ops, runs stored before it was recorded) carry the spec's hash."""
    run = report.run if isinstance(report, RunReport) else report
    source = run.options.get("kernel_hash") or run.spec_hash[:16]
    return {
        "op": run.problem,
        "source": source,
        "dtype": run.dtype,
        **shape,
        "arch": run.target.arch,
        "compute_units": run.target.compute_units,
        "device_name": run.target.device_name,
    }


def table_header(run: Run) -> dict[str, Any]:
    """Schema, provenance, validators and device of a table built from ``run``."""
    versions = dict(run.target.versions)
    return {
        "schema": SCHEMA,
        "provenance": {
            "written_by": f"kerntune {__version__}",
            "run": run.id,
            "created": run.created,
            "deployed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "validators": {**{k: v for k, v in versions.items() if k in VALIDATORS}, "kerntune": __version__},
        "device": {
            "vendor": run.target.vendor,
            "arch": run.target.arch,
            "device_name": run.target.device_name,
            "compute_units": run.target.compute_units,
        },
    }


def require_timed(run: Run) -> None:
    if not run.target.claims_timing:
        raise UsageError(
            f"tuning run {run.id} ran where no timing is claimed ({run.target.device_name}): its winners "
            "were never timed; deploy a tuning run made on the device the table is for"
        )


@dataclass(frozen=True)
class LibraryRatio:
    """A served spec's winner beside the library baseline at one shape: its time ratio (below 1: faster) by the
    events, by the second timer where one ran, and how it was measured."""

    ratio: float
    second: float | None
    library: str
    how: str

    @property
    def faster(self) -> bool:
        return self.ratio < 1.0 and (self.second is None or self.second < 1.0)


def library_ratio(s: ShapeReport) -> LibraryRatio | None:
    """The winner's time ratio to the library baseline (the baseline with no config; the spec's default config is
    a baseline too). Confirmed: interleaved beside it, by the events and the second timer. Unconfirmed
    (confirmation cut by the budget): search-time medians. None without a winner or a library baseline."""
    w = s.winner
    library = next((b for b in s.baselines if b.status == "ok" and not b.config.items), None)
    if w is None or library is None:
        return None
    if s.reference is library and w.id in s.interleaved:
        ratio = s.interleaved[w.id].ratio
        second = (s.second_timer.get(w.id) or {}).get("ratio") if w.id is not None else None
        how = f"time ratio {ratio:.4f} by the events, interleaved" + (
            f", {second:.4f} by the second timer" if second is not None else ""
        )
        return LibraryRatio(ratio, second, library.label, how)
    mine, theirs = w.best_measurement, library.best_measurement
    if mine is None or theirs is None:
        return None
    ratio = mine.median_ms / theirs.median_ms
    how = f"median {mine.median_ms:.4f} ms against {theirs.median_ms:.4f} ms (unconfirmed: search-time medians)"
    return LibraryRatio(ratio, None, library.label, how)


def not_faster_than_the_library(s: ShapeReport) -> dict[str, Any] | None:
    """Why a served spec's winner is left to the library at this shape, or None. A served key runs the library's
    kernel on a miss, so an entry that is not faster only adds host time."""
    found = library_ratio(s)
    if found is None or found.faster:
        return None
    return {
        "shape": s.shape.as_dict(),
        "ratio": found.ratio,
        "second_timer_ratio": found.second,
        "library": found.library,
        "why": f"the winner is not faster than {found.library}: {found.how}",
    }


def table_from_run(report: RunReport) -> dict[str, Any]:
    """The run's gated winners as a table. For a spec served in place of a library operator, a winner not faster
    than the library keeps its entry marked ``library_faster`` (why, and the ratios): ``kerntune run`` leaves
    those keys to the library, while a program that calls the spec's kernel itself (a ``Dispatcher``, whose miss
    runs the spec's default config, not the library) still gets its best config. ``left_to_library`` lists them."""
    run = report.run
    require_timed(run)
    entries, left = [], []
    served = bool(run.options.get("serves"))
    for s in report.shapes:
        w = s.winner
        if w is None or w.measurement is None:
            continue
        slower = not_faster_than_the_library(s) if served else None
        best = w.best_measurement
        entry = {
            "key": key_fields(report, s.shape.as_dict()),
            "config": w.config.as_dict(),
            "status": "measured",
            "median_ms": best.median_ms if best else None,
            "confirmed": w.confirmed is not None,
            "run": run.id,
            "spec": run.spec_path,
        }
        ratio = library_ratio(s) if served else None
        if ratio is not None:
            entry["library_ratio"] = ratio.second if ratio.second is not None else ratio.ratio
        if slower is not None:
            left.append(slower)
            entry["library_faster"] = {k: v for k, v in slower.items() if k != "shape"}
        entries.append(entry)
    if not entries:
        raise UsageError(f"tuning run {run.id} has no gated winner to deploy")
    return {**table_header(run), "entries": entries, "left_to_library": left}


def merged(path: Path, new: dict[str, Any]) -> dict[str, Any]:
    """``new`` over the table already at ``path`` (same device and validators required)."""
    if not path.exists():
        return new
    try:
        old = json.loads(path.read_text())
        parse_table(old, str(path))
    except (json.JSONDecodeError, TableError) as exc:
        raise UsageError(
            f"{path} exists but is not a readable table ({exc}); move it away or fix it — kerntune "
            "will not overwrite it"
        ) from exc
    if old.get("device", {}) != new["device"]:
        raise UsageError(f"{path} holds a table for another device ({old.get('device')}); deploy to a new file")
    # Specs of one table may record different libraries' versions (cuBLASLt's, Triton's): they must not disagree.
    theirs = {k: v for k, v in old.get("validators", {}).items() if k != "kerntune"}
    mine = {k: v for k, v in new["validators"].items() if k != "kerntune"}
    clash = {k: (theirs[k], mine[k]) for k in theirs.keys() & mine.keys() if theirs[k] != mine[k]}
    if clash:
        raise UsageError(f"{path} holds a table for other versions ({clash}); deploy to a new file")
    by_key = {entry_key(e["key"]): e for e in old.get("entries", [])}
    by_key.update({entry_key(e["key"]): e for e in new["entries"]})
    entries = rank_specs([by_key[k] for k in sorted(by_key)])
    return {**new, "validators": {**theirs, **new["validators"]}, "entries": entries}


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def c_header(table: dict[str, Any]) -> str:
    rows = sorted(
        (entry_key(e["key"]), ",".join(f"{k}={v}" for k, v in sorted(e["config"].items()))) for e in table["entries"]
    )
    lines = [
        f"/* kerntune dispatch table: {json.dumps(table['provenance'])}",
        f" * device {json.dumps(table['device'])}; validators {json.dumps(table['validators'])}",
        " * Written by `kerntune deploy`; do not edit. Keys are sorted for bsearch with strcmp. */",
        "struct kerntune_entry { const char *key; const char *config; };",
        "static const struct kerntune_entry KERNTUNE_ENTRIES[] = {",
    ]
    lines += [f"    {{{_c_string(key)}, {_c_string(config)}}}," for key, config in rows]
    lines += ["};", f"static const unsigned KERNTUNE_ENTRY_COUNT = {len(rows)}u;", ""]
    return "\n".join(lines)


def python_module(table: dict[str, Any]) -> str:
    header = json.dumps(table["provenance"])
    return (
        f'"""kerntune dispatch table, written by `kerntune deploy`; do not edit. {header}"""\n\n'
        f"SCHEMA = {table['schema']}\nTABLE = {pprint.pformat(table, width=110, sort_dicts=False)}\n"
    )


def check_table_path(path: Path) -> None:
    if path.suffix != ".json":
        raise UsageError(f"--table {path}: name the table *.json (the .py and .inc are written beside it)")


def write_artifacts(path: Path, table: dict[str, Any]) -> list[str]:
    """The JSON, Python and C forms of ``table``, each written atomically; the paths written."""
    parse_table(table, str(path))  # never write what the runtime would refuse to read
    outputs = {
        path: json.dumps(table, indent=1) + "\n",
        path.with_suffix(".py"): python_module(table),
        path.with_suffix(".inc"): c_header(table),
    }
    for target, text in outputs.items():
        write_atomically(target, text)
    return [str(p) for p in outputs]


def deploy(store: Store, run_ref: str, path: Path) -> dict[str, Any]:
    """Write the three artifacts; return the merged table and the paths written."""
    check_table_path(path)
    found = table_from_run(build_report(store, store.get_run(run_ref)))
    left = found.pop("left_to_library")
    found["entries"] = rank_specs(found["entries"])
    table = merged(path, found)
    return {"table": table, "written": write_artifacts(path, table), "left_to_library": left}
