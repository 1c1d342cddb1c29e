"""``kerntune migrate TABLE --to ARCH``: what a table tuned on one device needs tuned again for another.

A table is never carried across devices (the seeds' "copying tuned configs across architectures" failure:
different CU count, shared memory and instruction set, often a silent lookup miss). Migrating lists every entry
whose device fields differ from the target, with the shape to tune there, grouped by op, and the command that
tunes them; nothing is copied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerntune.errors import UsageError
from kerntune.runtime.table import load_table

DEVICE_FIELDS = ("arch", "compute_units", "device_name")
KEY_FIELDS = ("op", "source", "dtype", *DEVICE_FIELDS)


def migrate(path: Path, to: dict[str, Any]) -> dict[str, Any]:
    """Entries to tune again on the device ``to`` (fields among arch, compute_units, device_name). A file that is
    not a dispatch table (binary, not JSON, entries without keys) is a UsageError naming it."""
    not_table = f"{path} is not a dispatch table: give the *.json that `kerntune deploy` wrote"
    try:
        path.read_bytes().decode()
    except UnicodeDecodeError:
        raise UsageError(f"{not_table} (it is not text)") from None
    except OSError:
        pass  # load_table says why it cannot be read
    try:
        table, problem = load_table(path)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{not_table} ({type(exc).__name__}: {exc})") from None
    if problem is not None:
        raise UsageError(problem)
    unknown = set(to) - set(DEVICE_FIELDS)
    if unknown or not to:
        raise UsageError(f"--to needs device fields among {', '.join(DEVICE_FIELDS)}; got {sorted(to)}")
    retune: list[dict[str, Any]] = []
    keep = 0
    for entry in table.entries.values():
        key = entry.get("key") if isinstance(entry, dict) else None
        if not isinstance(key, dict):
            raise UsageError(f"{not_table} (an entry has no key)")
        changed = {f: (key.get(f), v) for f, v in to.items() if key.get(f) != v}
        if not changed:
            keep += 1
            continue
        shape = {k: v for k, v in key.items() if k not in KEY_FIELDS}
        retune.append(
            {
                "op": key.get("op"),
                "dtype": key.get("dtype"),
                "shape": shape,
                "because": {f: {"table": a, "target": b} for f, (a, b) in changed.items()},
            }
        )
    ops = sorted({str(r["op"]) for r in retune})
    commands = [
        f"kerntune tune SPEC_OF_{op} "
        + " ".join("--shape " + ",".join(f"{k}={v}" for k, v in r["shape"].items()) for r in retune if r["op"] == op)
        for op in ops
    ]
    return {
        "table": str(path),
        "device": table.device,
        "to": to,
        "retune": retune,
        "still_valid": keep,
        "commands": commands,
    }
