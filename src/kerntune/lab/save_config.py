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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kerntune.deploy.artifacts import VALIDATORS
from kerntune.errors import UsageError
from kerntune.lab.session import history
from kerntune.runtime.table import SCHEMA, TableError, entry_key, parse_table, write_atomically


def _passing_comparison(folder: Path, overrides: dict[str, Any]) -> dict[str, Any]:
    passed = [r for r in history(folder) if r.get("job") == "compare" and not r.get("variant")
              and r.get("overrides") == overrides and (r.get("validation") or {}).get("passed")]
    if not passed:
        shown = " ".join(f"--set {k}={json.dumps(v)}" for k, v in overrides.items())
        raise UsageError(f"{shown} has no passing comparison in this session: run kerntune lab compare "
                         f"{folder} {shown} first")
    return passed[-1]


def _check_source_unchanged(manifest: dict[str, Any]) -> None:
    identity = manifest["kernel"]
    path = Path(identity.get("file") or "")
    text = path.read_text() if path.is_file() else ""
    if identity["source"] not in text:
        raise UsageError(f"the kernel's source in {path} changed since the capture: the table key carries the "
                         "source's hash, so capture again and compare there")


def _table_to_update(path: Path, dispatch: dict[str, Any]) -> dict[str, Any]:
    validators = {k: v for k, v in dispatch["versions"].items() if k in (*VALIDATORS, "kerntune")}
    if not path.exists():
        return {"schema": SCHEMA, "provenance": {}, "validators": validators, "device": {}, "entries": []}
    try:
        table: dict[str, Any] = json.loads(path.read_text())
        parse_table(table, str(path))
    except (json.JSONDecodeError, TableError) as exc:
        raise UsageError(f"{path} exists but is not a readable table ({exc}); kerntune will not overwrite it") \
            from None
    stale = {k: (v, validators[k]) for k, v in (table.get("validators") or {}).items()
             if k in validators and validators[k] != v}
    if stale:
        raise UsageError(f"{path} was tuned under " + ", ".join(f"{k} {a} (the captured program: {b})"
                                                                for k, (a, b) in sorted(stale.items()))
                         + ": the program would not apply it; give another --table")
    return table


def save_config(folder: Path, overrides: dict[str, Any], table_path: Path | None = None) -> dict[str, Any]:
    """Write the captured launch's table entry with ``overrides`` applied; what was written and where."""
    from kerntune.lab.replay import load_capture

    manifest = load_capture(folder)
    dispatch = manifest.get("dispatch")
    if not dispatch:
        raise UsageError("the captured launch's config did not come from a kerntune Dispatcher, so there is no "
                         "table it reads: set the values in the program's launch, or select its config through "
                         "kerntune.runtime.Dispatcher and capture again")
    unknown = sorted(set(overrides) - set(dispatch["config"]))
    if unknown:
        raise UsageError(f"--set {unknown[0]}: the dispatcher's config has no such field "
                         f"({', '.join(dispatch['config'])}), so the live program would never read it")
    compared = _passing_comparison(folder, overrides)
    _check_source_unchanged(manifest)
    path = (table_path or Path(dispatch["table"] or "")).resolve()
    if not table_path and not dispatch["table"]:
        raise UsageError("the program's dispatcher had no table path: give --table PATH")
    now = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    if str(path) == dispatch["table"] and now != dispatch.get("table_sha256"):
        raise UsageError(f"{path} changed since the capture: nothing written (capture again, or give --table)")
    table = _table_to_update(path, dispatch)
    config = {**dispatch["config"], **overrides}
    entry = {"key": dispatch["fields"], "config": config, "status": "measured", "median_ms": compared["median_ms"],
             "source": f"kerntune lab save ({folder.name}, compare of {compared['created']})"}
    key = entry_key(dispatch["fields"])
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
    return {"table": str(path), "key": key, "config": config, "replaced": replaced[0]["config"] if replaced else None,
            "backup": str(backup) if backup else None, "compare": compared["created"],
            "ratio": compared.get("ratio")}
