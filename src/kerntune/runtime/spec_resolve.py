"""Which specs serve a table: only those the user names (``--spec``) or keeps in folders the user allows
(``--spec-dir``), matched to the table's entries by the spec's name and kernel source hash (the key's ``op`` and
``source``). A path written in the table is a hint for a file name inside an allowed folder, never a file to
import: a table is data, and importing a path it names would run whatever file it points at.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kerntune.model import Problem
from kerntune.runtime.keys import problem_source_hash
from kerntune.runtime.notice import notify
from kerntune.runtime.table import Table


def load_served_spec(path: str | Path) -> Problem:
    """The ``problem`` of a spec file (or a folder holding ``spec.py``); it must declare ``serve``."""
    file = Path(path)
    file = file / "spec.py" if file.is_dir() else file
    name = f"kerntune_served_{abs(hash(str(file.resolve())))}"
    loaded = importlib.util.spec_from_file_location(name, file)
    if loaded is None or loaded.loader is None:
        raise ValueError(f"{file} is not a Python spec file")
    module = importlib.util.module_from_spec(loaded)
    sys.modules[name] = module
    loaded.loader.exec_module(module)
    problem = getattr(module, "problem", None)
    if not isinstance(problem, Problem):
        raise ValueError(f"{file} defines no `problem = kt.Problem(...)`")
    if problem.serve is None:
        raise ValueError(
            f"{file}: problem {problem.name!r} declares no `serve=kt.Serve(...)`: it cannot take a "
            "library operator's calls"
        )
    return problem


@dataclass
class Resolved:
    """The specs that serve a table, and the specs its entries name that none of them is."""

    specs: list[tuple[str, Problem]] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    """``NAME (source HASH)`` of each spec the entries name that no given or allowed spec matches."""


def wanted_specs(table: Table) -> dict[tuple[str, str], set[str]]:
    """Per (spec name, kernel source hash) the table's entries are keyed by, the file names their ``spec``
    fields hint at (a folder's or a file's name, never a path)."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for entry in table.entries.values():
        key = entry["key"]
        if not isinstance(key.get("op"), str):
            continue
        hints = wanted.setdefault((key["op"], str(key.get("source"))), {Path(key["op"]).name})
        hint = entry.get("spec")
        if isinstance(hint, str) and hint:
            hints.add(Path(hint).name)
    return wanted


def _candidates(folders: Sequence[str | Path], hints: Iterable[str]) -> list[Path]:
    """Spec files inside the allowed folders that the hints name: FOLDER/spec.py, FOLDER/HINT/spec.py and
    FOLDER/HINT.py; a hint is one path component, so nothing outside a folder is reached."""
    found: list[Path] = []
    names = sorted({h for h in hints if h not in ("", ".", "..")})
    for folder in folders:
        root = Path(folder).resolve()
        for file in [root / "spec.py", *(root / n / "spec.py" for n in names), *(root / n for n in names)]:
            if file.suffix == ".py" and file.is_file() and file.resolve().is_relative_to(root) and file not in found:
                found.append(file)
    return found


def _search_order(folders: Sequence[str | Path], hints: Iterable[str]) -> Iterator[Path]:
    """The spec files the entries' paths hint at first; then, for entries still unmatched (a spec folder renamed
    or moved), every spec one level inside the allowed folders. Either way a spec serves only by name and hash."""
    yield from _candidates(folders, hints)
    yield from _every_spec(folders)


def _every_spec(folders: Sequence[str | Path]) -> list[Path]:
    """Every FOLDER/NAME/spec.py inside the allowed folders, in name order."""
    found: list[Path] = []
    for folder in folders:
        root = Path(folder).resolve()
        if root.is_dir():
            found += [f for f in sorted(root.glob("*/spec.py")) if f.resolve().is_relative_to(root)]
    return found


def _load(path: str | Path, where: str) -> Problem | None:
    try:
        return load_served_spec(path)
    except Exception as exc:  # a spec that will not load must not take the program down
        notify(
            f"kerntune serve: spec {path} ({where}) not served ({type(exc).__name__}: {exc}); "
            "the library runs its calls"
        )
        return None


def resolve_specs(table: Table, specs: Sequence[str | Path], spec_dirs: Sequence[str | Path]) -> Resolved:
    """Every spec given (served whatever the table holds), then those in the allowed folders whose name and
    kernel source hash some entry is keyed by. Entries no spec matches are named once: the library runs them."""
    done = Resolved()
    for path in specs:
        problem = _load(path, "--spec")
        if problem is not None:
            done.specs.append((str(path), problem))
    wanted = wanted_specs(table)
    have = {(p.name, str(problem_source_hash(p))) for _, p in done.specs}
    missing = {k: hints for k, hints in wanted.items() if k not in have}
    hints = {h for found in missing.values() for h in found}
    tried: set[Path] = set()
    for file in _search_order(spec_dirs, hints) if missing else ():
        if file in tried or all(k in have for k in missing):
            continue
        tried.add(file)
        problem = _load(file, "--spec-dir")
        ident = None if problem is None else (problem.name, str(problem_source_hash(problem)))
        if problem is not None and ident in missing and ident not in have:
            done.specs.append((str(file), problem))
            have.add(ident)
    done.unresolved = [f"{name} (source {source})" for name, source in sorted(wanted) if (name, source) not in have]
    if done.unresolved:
        notify(
            f"kerntune serve: no spec given with --spec or found in --spec-dir for the entries of "
            f"{', '.join(done.unresolved)} in {table.path or 'the table'} (a spec path written in a table is "
            "never imported); the library runs their calls"
        )
    return done
