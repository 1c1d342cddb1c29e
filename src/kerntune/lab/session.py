"""A lab session is a capture folder: its manifest and inputs, and what was done with them — ``history.jsonl``
(every replay and comparison, capped at 1,000 runs), ``logs/`` (one per job, capped at 64 MiB), ``backups/``
(sources ``lab save`` replaced). Jobs (replays, comparisons) run in a child process with a 600 s budget, so a
kernel that crashes or hangs costs its job, never the session.

``compare`` replays the captured kernel and a variant under the same conditions and validates the variant's
outputs against the original's; ``save`` rewrites the kernel's definition in its source file with a variant that
passed its comparison (atomically, with a backup, refused when the file changed since the capture); ``close``
deletes the captured inputs and outputs and keeps results, logs and backups.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError
from kerntune.lab.capture import MANIFEST
from kerntune.runtime.table import write_atomically

HISTORY_CAP = 1000
JOB_BUDGET_S = 600.0
LOG_CAP = 64 * 1024 * 1024
DATA_FILES = ("inputs.safetensors", "outputs.safetensors", "others.safetensors")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def history(folder: Path) -> list[dict[str, Any]]:
    path = folder / "history.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def record(folder: Path, row: dict[str, Any]) -> dict[str, Any]:
    """Append a run (keeping the newest HISTORY_CAP) and return it with its delta against the latest earlier run
    under the same conditions (mode, iterations, device)."""
    rows = history(folder)
    same = [r for r in rows if (r.get("mode"), r.get("iterations"), r.get("device")) ==
            (row.get("mode"), row.get("iterations"), row.get("device")) and r.get("median_ms")]
    if same and row.get("median_ms") and row.get("timing_claimed"):
        row["delta_vs_previous"] = row["median_ms"] / same[-1]["median_ms"] - 1
        row["previous"] = same[-1]["created"]
    rows = [*rows, {**row, "created": _now()}][-HISTORY_CAP:]
    write_atomically(folder / "history.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return rows[-1]


def run_job(folder: Path, request: dict[str, Any], budget_s: float = JOB_BUDGET_S) -> dict[str, Any]:
    """Run one lab job (``kerntune.lab.job``) in a child process within ``budget_s``; its log goes to
    ``logs/`` (the first LOG_CAP bytes). A crash or hang is an error naming the log, never a crash here."""
    logs = folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{request['job']}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}.log"
    with tempfile.TemporaryFile() as out, open(log, "wb") as err:
        try:
            done = subprocess.run([sys.executable, "-m", "kerntune.lab.job", str(folder), json.dumps(request)],
                                  stdout=out, stderr=subprocess.PIPE, timeout=budget_s)
            err.write(done.stderr[:LOG_CAP])
        except subprocess.TimeoutExpired as exc:
            err.write((exc.stderr or b"")[:LOG_CAP])
            raise UsageError(f"the {request['job']} job ran past its {budget_s:.0f} s budget and was stopped "
                             f"(log: {log})") from None
        out.seek(0)
        text = out.read().decode(errors="replace")
    if done.returncode != 0:
        tail = (done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"])[0]
        if done.returncode == 2 and tail.startswith("kerntune: error: "):
            raise UsageError(tail.removeprefix("kerntune: error: "))
        raise UsageError(f"the {request['job']} job failed (exit {done.returncode}): {tail} (log: {log})")
    result: dict[str, Any] = json.loads(text)
    result["log"] = str(log)
    return result


def variant_sha(variant: Path) -> str:
    return hashlib.sha256(variant.read_bytes()).hexdigest()


def save(folder: Path, variant: Path) -> dict[str, Any]:
    """Write ``variant``'s kernel definition over the captured one in its source file."""
    from kerntune.lab.capture import kernel_identity
    from kerntune.lab.replay import load_capture, load_kernel

    manifest = load_capture(folder)
    identity = manifest["kernel"]
    sha = variant_sha(variant)
    passed = [r for r in history(folder) if r.get("job") == "compare" and r.get("variant_sha256") == sha
              and (r.get("validation") or {}).get("passed")]
    if not passed:
        raise UsageError(f"{variant} has no passing comparison in this session: run kerntune lab compare first")
    if not identity.get("file"):
        raise UsageError("the kernel's source text was not found in any file the program loaded: nothing to rewrite")
    target = Path(identity["file"])
    text = target.read_text()
    if hashlib.sha256(text.encode()).hexdigest() != identity["file_sha256"]:
        raise UsageError(f"{target} changed since the capture: nothing written (capture again to edit it)")
    if identity["language"] == "opencl":  # the source is a string in the file: replace that text
        start = text.find(identity["source"])
        span = [text.count("\n", 0, start) + 1, text.count("\n", 0, start + len(identity["source"])) + 1]
        new_text = text.replace(identity["source"], load_kernel(manifest, variant), 1)
    else:
        lines = text.splitlines(keepends=True)
        first = identity["first_line"] - 1
        count = len(identity["source"].splitlines(keepends=True))
        if "".join(lines[first:first + count]) != identity["source"]:
            raise UsageError(f"{target}: the captured definition is not at line {first + 1}: nothing written")
        replacement = kernel_identity(load_kernel(manifest, variant))["source"]
        new_text = "".join([*lines[:first], replacement, *lines[first + count:]])
        span = [first + 1, first + count]
    backups = folder / "backups"
    backups.mkdir(exist_ok=True)
    backup = backups / f"{target.name}.{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}"
    shutil.copy2(target, backup)
    write_atomically(target, new_text)  # readers see the old file or the new one, never half of it
    return {"file": str(target), "backup": str(backup), "lines": span,
            "compare": passed[-1]["created"]}


def close(folder: Path) -> dict[str, Any]:
    """Delete the captured data; keep the manifest (marked closed), history, logs and backups."""
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{folder} is not a kerntune capture ({exc})") from None
    removed = []
    for name in (*DATA_FILES, "validation"):
        path = folder / name
        if path.is_dir():
            shutil.rmtree(path)
            removed.append(name)
        elif path.exists():
            path.unlink()
            removed.append(name)
    manifest["closed"] = _now()
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return {"removed": removed, "kept": sorted(p.name for p in folder.iterdir())}
