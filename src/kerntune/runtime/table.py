"""Dispatch tables: what ``kerntune deploy`` writes and the live runtime reads. Standard library only.

A table is JSON: ``{"schema": 1, "provenance": {...}, "validators": {...}, "device": {...}, "entries": [...]}``.
An entry is ``{"key": {field: value}, "config": {...}, "status": ..., "median_ms": ...}``; its identity is
``entry_key(fields)``, every field of the live call that can change the winner in one canonical string. A
table that cannot be read (truncated, hand-broken, a newer schema, two entries with one key) never takes the
user's program down: ``load_table`` returns an empty table and the reason, the runtime warns and falls back
to its default config.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = 1
STATUSES = ("exploratory", "measured", "rejected", "promotion candidate", "admitted")
"""The hipfire seed's ladder: every entry carries one."""


def entry_key(fields: Mapping[str, object]) -> str:
    """The canonical identity of a live call: ``name=value`` pairs sorted by name, joined by ``;``. Values are
    written as JSON scalars (``4096``, ``"bfloat16"``), so ``4096`` and ``"4096"`` are different keys."""
    return ";".join(f"{name}={json.dumps(fields[name], separators=(',', ':'))}" for name in sorted(fields))


def field_value(name: str, fields: Mapping[str, object]) -> Any:
    """A key field, or a derived one a rule may bound: ``N/K`` (a ratio of two fields) or ``M*N*K`` (a product).
    None when a field it needs is missing or not a number."""
    if name in fields:
        return fields[name]
    parts = name.split("/") if "/" in name else name.split("*")
    raw = [fields.get(p) for p in parts]
    values = [float(v) for v in raw if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(parts) < 2 or len(values) != len(parts):
        return None
    if "/" in name:
        return values[0] / values[1] if len(values) == 2 and values[1] else None
    product = 1.0
    for v in values:
        product *= v
    return product


def rule_matches(rule: Mapping[str, Any], fields: Mapping[str, object]) -> bool:
    """A rule's ``when``: each field (or derived field) equal to a value, or within ``[low, high)`` for a pair."""
    for name, want in (rule.get("when") or {}).items():
        have = field_value(name, fields)
        if isinstance(want, list) and len(want) == 2:
            if not isinstance(have, (int, float)) or not (want[0] <= have < want[1]):
                return False
        elif have != want:
            return False
    return True


class TableError(ValueError):
    """A table that must not be applied, with what was wrong and what to do."""


@dataclass(frozen=True)
class Table:
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """By ``entry_key``: the entry (key fields, config, status, median)."""
    rules: list[dict[str, Any]] = field(default_factory=list)
    """Fallback rules, first match wins: ``{"when": {field: value or [low, high)}, "config": {...}}``; a field
    may be derived (``N/K``, ``M*N*K``: see ``field_value``)."""
    validators: dict[str, str] = field(default_factory=dict)
    """Versions the entries were tuned under (driver, toolkit, triton, torch, kerntune)."""
    device: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    path: str = ""


def _objects(item: Mapping[str, object], *names: str) -> bool:
    return all(isinstance(item.get(name), dict) for name in names)


_SCALARS = (str, int, float, bool, type(None))


def _scalars(path: str, what: str, values: Mapping[str, object]) -> None:
    """Every value of a key, config or ``when`` a JSON scalar (a ``when`` may hold a ``[low, high)`` pair)."""
    for name, value in values.items():
        pair = isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value)
        if not (isinstance(value, _SCALARS) or (what.startswith("rule") and pair)):
            raise TableError(f"{path}: {what} field {name!r} is a {type(value).__name__}, not a number or string")


def _mapping(data: Mapping[str, object], name: str, path: str) -> dict[str, object]:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TableError(f"{path}: '{name}' is a {type(value).__name__}, not an object: hand-edited; deploy it again")
    return value


def _listed(data: Mapping[str, object], name: str, path: str) -> list[object]:
    value = data.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TableError(f"{path}: '{name}' is a {type(value).__name__}, not a list: hand-edited; deploy it again")
    return value


def parse_table(data: object, path: str = "") -> Table:
    """A Table from decoded JSON; a TableError says what is wrong. Every field is checked for its type: a table
    is read by a program that never chose to trust it."""
    if not isinstance(data, dict):
        raise TableError(f"{path}: a table is a JSON object with schema, validators and entries")
    schema = data.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise TableError(f"{path}: no integer 'schema' field: not a kerntune table, or hand-edited")
    if schema > SCHEMA:
        raise TableError(f"{path}: schema {schema} is newer than this kerntune reads ({SCHEMA}): upgrade kerntune")
    entries: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(_listed(data, "entries", path)):
        if not (isinstance(entry, dict) and _objects(entry, "key", "config")):
            raise TableError(f"{path}: entry {i} needs a 'key' object and a 'config' object")
        _scalars(path, f"entry {i}'s key", entry["key"])
        _scalars(path, f"entry {i}'s config", entry["config"])
        status = entry.get("status", "measured")
        if not isinstance(status, str) or status not in STATUSES:
            raise TableError(f"{path}: entry {i} has status {status!r}; one of {', '.join(STATUSES)}")
        key = entry_key(entry["key"])
        if key in entries:
            raise TableError(f"{path}: entries {list(entries).index(key)} and {i} have the same key {key}: keep one")
        entries[key] = {**entry, "status": status}
    rules: list[dict[str, Any]] = []
    for i, rule in enumerate(_listed(data, "rules", path)):
        if not (isinstance(rule, dict) and _objects(rule, "when", "config")):
            raise TableError(f"{path}: rule {i} needs a 'when' object and a 'config' object")
        _scalars(path, f"rule {i}'s when", rule["when"])
        _scalars(path, f"rule {i}'s config", rule["config"])
        rules.append(rule)
    validators = _mapping(data, "validators", path)
    _scalars(path, "validators", validators)
    return Table(
        entries=entries,
        rules=rules,
        validators={str(k): str(v) for k, v in validators.items()},
        device=dict(_mapping(data, "device", path)),
        provenance=dict(_mapping(data, "provenance", path)),
        path=path,
    )


def load_table(path: str | Path) -> tuple[Table, str | None]:
    """The table at ``path``, or an empty table and the reason it could not be used (never an exception: the
    live program goes on with its default config)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        return Table(path=str(path)), f"cannot read dispatch table {path}: {exc.strerror or exc}"
    except UnicodeDecodeError:
        return Table(path=str(path)), f"dispatch table {path} is not text (binary bytes): deploy it again"
    try:
        return parse_table(json.loads(text), str(path)), None
    except json.JSONDecodeError as exc:
        return (
            Table(path=str(path)),
            f"dispatch table {path} is not valid JSON ({exc.msg} at line {exc.lineno}): "
            "truncated or hand-edited; deploy it again",
        )
    except TableError as exc:
        return Table(path=str(path)), f"dispatch table {exc}"
    except RecursionError:
        return Table(path=str(path)), f"dispatch table {path} is nested too deeply to be a table: deploy it again"
    except (ValueError, TypeError) as exc:  # whatever else a hand-made file holds: never the program's problem
        return Table(path=str(path)), f"dispatch table {path} cannot be read ({type(exc).__name__}: {exc})"


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new one, never half of one. The file
    keeps the mode of the one it replaces, or gets the umask's default — not mkstemp's owner-only 0600: a table is
    read by the program's user, who may not be the one deploying it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the OS applies the umask
    try:
        with os.fdopen(fd, "w") as handle:
            if path.exists():
                os.fchmod(handle.fileno(), stat.S_IMODE(path.stat().st_mode))
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
