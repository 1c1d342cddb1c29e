"""``kerntune lab save CAPTURE --set NAME=VALUE [--table PATH]``: a config variant that passed its comparison,
written where the live program reads its configs — the dispatch table entry of the captured launch's key.

A config is not source text: the program chose it through a kerntune ``Dispatcher``, and the capture recorded
that selection (the key's fields, the decision, the table path and this process's versions). Saving writes the
entry for that key with the selected config and the overrides, status ``measured`` (the lab timed it in
isolation and validated it; ``kerntune admit`` promotes on the A/B evidence production mode asks for). The
table is written atomically, the one it replaces is backed up in the capture folder, and nothing is written
when: the launch's config did not come from a Dispatcher, no comparison of exactly these overrides passed, an
override is no field of the dispatcher's config (the program would never read it), the kernel's source or the
table changed since the capture, or the table cannot be read or was tuned under other versions.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kerntune.deploy.artifacts import VALIDATORS
from kerntune.errors import UsageError
from kerntune.lab.manifest import Manifest
from kerntune.lab.session import history
from kerntune.model import Scalar
from kerntune.runtime.table import SCHEMA, TableError, entry_key, parse_table, write_atomically


def _passing_comparison(folder: Path, overrides: Mapping[str, Scalar], spec: Path | None = None) -> dict[str, Any]:
    """The latest comparison in this session that passed validation with exactly ``overrides`` (a config variant
    of the captured launch, or with ``spec`` a spec's kernel taking a captured operator call)."""
    passed = [
        r
        for r in history(folder)
        if r.get("job") == "compare"
        and not r.get("variant")
        and r.get("spec") == (str(spec) if spec else None)
        and r.get("overrides") == overrides
        and (r.get("validation") or {}).get("passed")
    ]
    if not passed:
        shown = " ".join(f"--set {k}={json.dumps(v)}" for k, v in overrides.items())
        with_spec = f" --spec {spec}" if spec else ""
        raise UsageError(
            f"{with_spec.strip()} {shown} has no passing comparison in this session: run kerntune lab "
            f"compare {folder}{with_spec} {shown} first".replace("  ", " ").lstrip()
        )
    return passed[-1]


def _check_source_unchanged(manifest: Manifest) -> None:
    identity = manifest["kernel"]
    path = Path(identity.get("file") or "")
    text = path.read_text() if path.is_file() else ""
    if (identity["source"] or "") not in text:
        raise UsageError(
            f"the kernel's source in {path} changed since the capture: the table key carries the "
            "source's hash, so capture again and compare there"
        )


def _table_to_update(path: Path, versions: dict[str, Any], device: dict[str, Any] | None = None) -> dict[str, Any]:
    validators = {k: v for k, v in versions.items() if k in (*VALIDATORS, "kerntune")}
    if not path.exists():
        return {"schema": SCHEMA, "provenance": {}, "validators": validators, "device": device or {}, "entries": []}
    try:
        table: dict[str, Any] = json.loads(path.read_text())
        parse_table(table, str(path))
    except (json.JSONDecodeError, TableError) as exc:
        raise UsageError(f"{path} exists but is not a readable table ({exc}); kerntune will not overwrite it") from None
    stale = {
        k: (v, validators[k])
        for k, v in (table.get("validators") or {}).items()
        if k in validators and validators[k] != v
    }
    if stale:
        raise UsageError(
            f"{path} was tuned under "
            + ", ".join(f"{k} {a} (the captured program: {b})" for k, (a, b) in sorted(stale.items()))
            + ": the program would not apply it; give another --table"
        )
    return table


def _write_entry(
    folder: Path, path: Path, table: dict[str, Any], entry: dict[str, Any]
) -> tuple[str, list[dict[str, Any]], Path | None]:
    """``entry`` into ``table`` (replacing the one of its key), written atomically to ``path``; the table it
    replaces backed up in the capture folder. Returns the key, the entries replaced and the backup."""
    key = entry_key(entry["key"])
    replaced = [e for e in table.get("entries", []) if entry_key(e["key"]) == key]
    table["entries"] = [*(e for e in table.get("entries", []) if entry_key(e["key"]) != key), entry]
    table.setdefault("provenance", {})["lab_save"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    backup = None
    if path.exists():
        backups = folder / "backups"
        backups.mkdir(exist_ok=True)
        backup = backups / f"{path.name}.{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}"
        shutil.copy2(path, backup)
    write_atomically(path, json.dumps(table, indent=1) + "\n")
    return key, replaced, backup


def save_config(folder: Path, overrides: Mapping[str, Scalar], table_path: Path | None = None) -> dict[str, Any]:
    """Write the captured launch's table entry with ``overrides`` applied; what was written and where."""
    from kerntune.lab.replay import load_capture

    manifest = load_capture(folder)
    dispatch = manifest.get("dispatch")
    if not dispatch:
        raise UsageError(
            "the captured launch's config did not come from a kerntune Dispatcher, so there is no "
            "table it reads: set the values in the program's launch, or select its config through "
            "kerntune.runtime.Dispatcher and capture again"
        )
    unknown = sorted(set(overrides) - set(dispatch["config"]))
    if unknown:
        raise UsageError(
            f"--set {unknown[0]}: the dispatcher's config has no such field "
            f"({', '.join(dispatch['config'])}), so the live program would never read it"
        )
    compared = _passing_comparison(folder, overrides)
    _check_source_unchanged(manifest)
    path = (table_path or Path(dispatch["table"] or "")).resolve()
    if not table_path and not dispatch["table"]:
        raise UsageError("the program's dispatcher had no table path: give --table PATH")
    now = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    if str(path) == dispatch["table"] and now != dispatch.get("table_sha256"):
        raise UsageError(f"{path} changed since the capture: nothing written (capture again, or give --table)")
    table = _table_to_update(path, dispatch["versions"])
    config = {**dispatch["config"], **overrides}
    entry = {
        "key": dispatch["fields"],
        "config": config,
        "status": "measured",
        "median_ms": compared["median_ms"],
        "source": f"kerntune lab save ({folder.name}, compare of {compared['created']})",
    }
    key, replaced, backup = _write_entry(folder, path, table, entry)
    return {
        "table": str(path),
        "key": key,
        "config": config,
        "replaced": replaced[0]["config"] if replaced else None,
        "backup": str(backup) if backup else None,
        "compare": compared["created"],
        "ratio": compared.get("ratio"),
    }


def slower_by_either_timer(side: dict[str, Any]) -> str | None:
    """Which timer found the variant slower beyond its 95% interval in an interleaved comparison (``side``: its
    ``ratio``, ``ci`` and, where the profiler ran, ``second_timer``), said as "TIMER ratio R, 95% CI L-H"; None when
    neither did. Both must clear a kernel before it is served: one the events call a tie and the profiler's kernel
    durations call slower (seen on the H200 at a decode GEMM: events 1.002, CI 0.995-1.011; CUPTI 1.008, CI
    1.003-1.014) is slower. A second timer that failed (``error``) clears nothing and blocks nothing."""
    for timer, found in (("time", side), ("profiler-timed", side.get("second_timer") or {})):
        if "ci" in found and found["ci"][0] > 1.0:
            return f"{timer} ratio {found['ratio']:.3f}, 95% CI {found['ci'][0]:.3f}-{found['ci'][1]:.3f}"
    return None


def save_served(folder: Path, spec: Path, overrides: Mapping[str, Scalar], table_path: Path) -> dict[str, Any]:
    """A spec's kernel at ``overrides`` that took a captured operator call, passed its comparison with the library
    and was timed beside it, written as the served table entry of that call's key — what ``kerntune run`` serves
    the unmodified program. Refused when no such comparison passed here, when it was never timed (a CPU capture:
    an untimed kernel is never served), or when it was slower than the library beyond its interval by either timer
    (CUDA events, or the profiler's kernel durations where the comparison has them)."""
    from kerntune.lab.replay import load_capture
    from kerntune.runtime.keys import problem_source_hash
    from kerntune.runtime.serving import load_served_spec

    manifest = load_capture(folder)
    if manifest["kernel"]["language"] != "aten":
        raise UsageError(
            "--spec saves a spec's kernel for a captured operator call; this capture is a kernel "
            "launch: save --set NAME=VALUE or --variant FILE"
        )
    spec = spec.resolve()
    compared = _passing_comparison(folder, overrides, spec)
    side = compared.get("interleaved")
    if not compared.get("timing_claimed") or not side:
        raise UsageError(
            "that comparison ran where no timing is claimed (the CPU: the spec's kernel ran in "
            "Triton's interpreter): a kernel the table serves must have been timed against the "
            "library's; compare on the GPU the program runs on"
        )
    slower = slower_by_either_timer(side)
    if slower:
        raise UsageError(f"the spec's kernel was slower than the library's on this call ({slower}): nothing written")
    problem = load_served_spec(spec)
    fields = problem.shape_fields()
    raw = compared["served_key"]
    device = manifest["device"]
    key = {
        "op": problem.name,
        "source": problem_source_hash(problem),
        "dtype": raw[0],
        **dict(zip(fields, raw[1:], strict=True)),
        "arch": device["arch"],
        "compute_units": device["compute_units"],
        "device_name": device["name"],
    }
    table = _table_to_update(
        table_path.resolve(),
        manifest["versions"],
        {"arch": device["arch"], "device_name": device["name"], "compute_units": device["compute_units"]},
    )
    entry = {
        "key": key,
        "config": compared["served_config"],
        "status": "measured",
        "median_ms": compared["median_ms"],
        "spec": str(spec),
        "vs_library": {"ratio": side["ratio"], "ci": side["ci"], "pairs": side["pairs"], "order": side["order"]},
        "source": f"kerntune lab save ({folder.name}, compare of {compared['created']})",
    }
    written, replaced, backup = _write_entry(folder, table_path.resolve(), table, entry)
    return {
        "table": str(table_path.resolve()),
        "key": written,
        "config": entry["config"],
        "replaced": replaced[0]["config"] if replaced else None,
        "backup": str(backup) if backup else None,
        "compare": compared["created"],
        "ratio": side["ratio"],
    }
