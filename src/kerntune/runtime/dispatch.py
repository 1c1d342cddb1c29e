"""The live lookup: which config a call runs, from a deployed table. Standard library only.

Order: the exact entry for the call's key → the first fallback rule whose bounds hold → the conservative
default. Decisions are cached per key (a dict lookup per call after the first); every call is counted as an
exact hit, a rule hit or a default, so a hit rate is per call, not per distinct key. A table whose validators
(driver, toolkit, triton, torch, kerntune versions) differ from this process's, or that could not be read,
is not applied: every call is a counted miss, and the reason is warned once. ``production`` mode applies
admitted entries only (fail closed); ``explore`` applies every entry that was not rejected. Given the spec's
``space``, an entry or rule whose config the space does not hold, or whose constraints reject it at the key's
shape and device, is never applied: its calls are counted misses, and each is named once
(``stats()["rejected"]``).

``KERNTUNE_LOG_DISPATCH=1`` writes the first decision for each key to stderr; ``KERNTUNE_RECORD_UNTUNED=PATH``
appends each missed key with its calls when the process exits, one corpus line each (``kerntune.runtime.corpus``):
a shape corpus for ``kerntune tune --shapes-from``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict, cast

from kerntune.model import Space
from kerntune.runtime.corpus import CorpusLine, append_corpus
from kerntune.runtime.entry_check import config_problem
from kerntune.runtime.keys import OpenCLDevice, kernel_hash
from kerntune.runtime.notice import notify
from kerntune.runtime.table import Table, entry_key, load_table, rule_matches
from kerntune.settings import Settings

MODES = ("explore", "production")


class DispatchStats(TypedDict):
    """A dispatcher's calls by decision, its hit rate by calls (None before a call), the calls of each missed
    key, why its table is not applied (or None) and the entries the space refused."""

    calls: int
    exact: int
    rule: int
    default: int
    hit_rate: float | None
    missed_keys: dict[str, int]
    disabled: str | None
    rejected: dict[str, str]


def live_versions(opencl_device: OpenCLDevice | None = None) -> dict[str, str]:
    """Versions of what this process has loaded (nothing is imported to find them), named as the backends record
    them for a table's validators: triton, torch, cuda or hip (torch's build), pyopencl. ``opencl_device``, the
    pyopencl ``Device`` a program launches on, adds its OpenCL version and driver (``opencl_versions``)."""
    found = {}
    for name in ("triton", "torch"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__version__", None):
            found[name] = str(module.__version__)
    torch = sys.modules.get("torch")
    for build in ("cuda", "hip"):
        built = getattr(getattr(torch, "version", None), build, None)
        if built:
            found[build] = str(built)
    pyopencl = sys.modules.get("pyopencl")
    if pyopencl is not None and getattr(pyopencl, "VERSION_TEXT", None):
        found["pyopencl"] = str(pyopencl.VERSION_TEXT)
    if opencl_device is not None:
        found.update(opencl_versions(opencl_device))
    from importlib.metadata import PackageNotFoundError, version

    # The installed distribution's version: the layering rule keeps the runtime off the package's top level.
    with contextlib.suppress(PackageNotFoundError):
        found["kerntune"] = version("kerntune")
    return found


def opencl_versions(device: OpenCLDevice) -> dict[str, str]:
    """The OpenCL version and driver of a pyopencl ``Device`` (duck-typed), as the OpenCL backend records them."""
    return {"opencl": str(device.version).strip(), "driver": str(device.driver_version).strip()}


class Dispatcher:
    def __init__(
        self,
        table: Table | str | Path,
        *,
        key: Callable[..., Any],
        default: Mapping[str, object],
        device: Mapping[str, object] | None = None,
        versions: Mapping[str, str] | None = None,
        mode: str = "explore",
        settings: Settings | None = None,
        key_fields: tuple[str, ...] = (),
        name: str = "",
        space: Space | None = None,
    ) -> None:
        """``key(*args, **kwargs)`` gives the call's fields (op, dtypes, layout, shape) as a mapping, or, when
        ``key_fields`` names them, as a tuple of their values in that order (the cheaper form: no dict is
        built per call). ``device`` holds the device's fields (arch, compute_units, device_name) that every
        table key carries; ``versions`` this process's (default: what is loaded); ``name`` the kernel it
        launches (``kernel(fn)`` sets it), or the prefix its kernels' names share: ``kerntune verify`` finds its
        launches in a profile by it. ``space``: the spec's Space; each entry and rule is applied only where
        its config is a point of it that passes its constraints at the call's key (``entry_check``)."""
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
        self.key_fields, self.name = tuple(key_fields), name
        problem = None
        if isinstance(table, Table):
            self.table = table
        else:
            self.table, problem = load_table(table)
        self.key_fn, self.default, self.mode = key, dict(default), mode
        self.fixed = dict(device or {})
        """Fields every key carries: the device's, and the kernel's source hash once `kernel` is called."""
        self.settings = settings or Settings.from_env()
        live = dict(versions) if versions is not None else live_versions()
        stale = {k: (v, live[k]) for k, v in self.table.validators.items() if k in live and live[k] != v}
        if problem is None and stale:
            problem = (
                f"dispatch table {self.table.path or '(in memory)'} was tuned under "
                + ", ".join(f"{k} {was} (this process: {now})" for k, (was, now) in sorted(stale.items()))
                + ": not applied; tune again or `kerntune migrate` it"
            )
        if self.settings.dispatch == "off":
            problem = "KERNTUNE_DISPATCH=off (set while kerntune measures, so a table never measures itself)"
        self.disabled = problem
        if problem is not None and self.settings.dispatch == "on":
            notify(problem + " — running the default config", stacklevel=3)
        self._cache: dict[tuple[object, ...], _Decision] = {}
        """Per distinct call: its decision and how many calls it served."""
        self.space = space
        self.rejected: dict[str, str] = {}
        """Entries (by key) and rules (``rule N at KEY``) whose config the space refuses, with the rule broken."""
        if space is not None and problem is None:
            self._reject_entries()
        if self.settings.verify_out:
            _report_at_exit(self, Path(self.settings.verify_out))

    def _reject_entries(self) -> None:
        """Judge, once, every entry this dispatcher could read (its key holds the fixed fields); warn once,
        naming each refused entry and the rule it broke."""
        for key, entry in self.table.entries.items():
            fields = entry["key"]
            if all(fields.get(name) == value for name, value in self.fixed.items()):
                self._refused(key, entry["config"], fields)
        if self.rejected:
            named = "; ".join(f"{key}: {why}" for key, why in self.rejected.items())
            notify(
                f"dispatch table {self.table.path or '(in memory)'}: {len(self.rejected)} entries break the spec's "
                f"space and are never applied (their calls run the default or the library): {named}",
                stacklevel=4,
            )

    def _refused(self, key: str, config: Mapping[str, object], fields: Mapping[str, object]) -> bool:
        """Whether ``config`` may not run at this key (recorded in ``rejected``); always False without a space."""
        if self.space is None:
            return False
        if key not in self.rejected:
            why = config_problem(self.space, config, fields, self.table.device)
            if why is None:
                return False
            self.rejected[key] = why
        return True

    def _decide(self, fields: Mapping[str, object], key: str) -> tuple[dict[str, object], str]:
        if self.disabled is None:
            entry = self.table.entries.get(key)
            usable = entry is not None and (
                entry["status"] == "admitted" if self.mode == "production" else entry["status"] != "rejected"
            )
            if entry is not None and usable:
                known = key in self.rejected
                if not self._refused(key, entry["config"], fields):
                    return dict(entry["config"]), "exact"
                if not known:
                    notify(f"dispatch table {self.table.path}: entry {key} {self.rejected[key]}: not applied")
            for i, rule in enumerate(self.table.rules):
                if self.mode == "production" and rule.get("status") != "admitted":
                    continue  # fail closed: production applies admitted rules and entries only
                if rule_matches(rule, fields) and not self._refused(f"rule {i} at {key}", rule["config"], fields):
                    return dict(rule["config"]), "rule"
        return dict(self.default), "default"

    def select(self, *args: object, **kwargs: object) -> dict[str, object]:
        """The config this call runs. After a key's first call: the key function, one dict lookup and a count
        (the canonical key string is built once per distinct call). The returned dict is shared: read it."""
        raw = self.key_fn(*args, **kwargs)
        if raw.__class__ is not tuple:
            raw = tuple(raw.items())
        decision = self._cache.get(raw)
        if decision is None:
            decision = self._first_call(raw)
        decision.calls += 1
        return decision.config

    def lookup(self, raw: tuple[object, ...]) -> dict[str, object] | None:
        """The exact entry's config for a call whose ``key_fields`` values are ``raw``, or None (a rule, the
        default, a table not applied): what serving a library operator reads, where a miss runs the library's
        own kernel rather than a default config. Counted as a call."""
        decision = self._cache.get(raw)
        if decision is None:
            decision = self._first_call(raw)
        decision.calls += 1
        return decision.config if decision.kind == "exact" else None

    def add_calls(self, raw: tuple[object, ...], calls: int) -> None:
        """Count ``calls`` more calls of a key ``lookup`` has decided: what serving's native gate counted in C++."""
        self._cache[raw].calls += calls

    def entry_for(self, raw: tuple[object, ...]) -> dict[str, Any] | None:
        """The table entry a decided call reads (its exact decision), or None."""
        decision = self._cache.get(raw)
        return self.table.entries.get(decision.key) if decision is not None and decision.kind == "exact" else None

    def _first_call(self, raw: tuple[object, ...]) -> _Decision:
        fields = self._fields(raw)
        key = entry_key(fields)
        config, kind = self._decide(fields, key)
        decision = self._cache[raw] = _Decision(config, kind, key, fields)
        self._first_decision(fields, key, (config, kind))
        return decision

    def _fields(self, raw: tuple[object, ...]) -> dict[str, object]:
        """A call's key fields: the fixed ones (device, op, source) and the key function's values."""
        if self.key_fields:
            if len(raw) != len(self.key_fields):
                raise ValueError(
                    f"the key function gave {len(raw)} values for the {len(self.key_fields)} "
                    f"key_fields {self.key_fields}"
                )
            return {**self.fixed, **dict(zip(self.key_fields, raw, strict=True))}
        return {**self.fixed, **dict(cast(tuple[tuple[str, object], ...], raw))}  # the key mapping's items

    def describe(self, *args: object, **kwargs: object) -> dict[str, object]:
        """What ``select`` decides for this call, and from where: the key's fields and canonical string, the
        decision (exact, rule, default), the config, the table's path and validators, this process's versions
        and why the table is not applied (or None). Not counted as a call; ``kerntune capture`` records it, so
        ``lab save --set`` can write the entry this call would read."""
        raw = self.key_fn(*args, **kwargs)
        if raw.__class__ is not tuple:
            raw = tuple(raw.items())
        decision = self._cache.get(raw) or self._first_call(raw)
        return {
            "name": self.name,
            "fields": self._fields(raw),
            "key": decision.key,
            "kind": decision.kind,
            "config": dict(decision.config),
            "table": self.table.path,
            "mode": self.mode,
            "table_validators": dict(self.table.validators),
            "versions": live_versions(),
            "disabled": self.disabled,
        }

    def kernel(self, fn: Any) -> Any:
        """``fn`` (a ``@triton.jit`` function) launched as ``kernel[grid](*args)`` with the config this
        dispatcher selects for the call's arguments (the key function receives the same arguments). Every key
        gains ``source``, the kernel's source hash, as ``kerntune deploy`` writes it: an edited kernel misses."""
        self.fixed["source"] = kernel_hash(fn)
        self.name = self.name or str(getattr(getattr(fn, "fn", fn), "__name__", ""))
        self._cache.clear()
        return _DispatchedKernel(fn, self)

    def _first_decision(self, fields: Mapping[str, object], key: str, decided: tuple[dict[str, object], str]) -> None:
        if self.settings.log_dispatch:
            why = f" ({self.disabled})" if self.disabled else ""
            sys.stderr.write(f"kerntune dispatch: {key} -> {decided[1]} {json.dumps(decided[0])}{why}\n")
        if decided[1] != "exact" and self.settings.record_untuned and self not in _RECORDING:
            if not _RECORDING:
                atexit.register(write_untuned)
            _RECORDING.append(self)

    def untuned(self) -> list[CorpusLine]:
        """The keys this dispatcher missed (rule or default), with their calls so far, as corpus lines."""
        return [CorpusLine.from_key(d.fields, d.calls) for d in self._cache.values() if d.kind != "exact" and d.calls]

    def stats(self) -> DispatchStats:
        """Calls by decision (exact, rule, default), the hit rate by calls, and calls per missed key."""
        by_kind: Counter[str] = Counter({"exact": 0, "rule": 0, "default": 0})
        for d in self._cache.values():
            by_kind[d.kind] += d.calls
        total = sum(by_kind.values())
        missed = {d.key: d.calls for d in self._cache.values() if d.kind != "exact" and d.calls}
        return {
            "calls": total,
            "exact": by_kind["exact"],
            "rule": by_kind["rule"],
            "default": by_kind["default"],
            "hit_rate": by_kind["exact"] / total if total else None,
            "missed_keys": missed,
            "disabled": self.disabled,
            "rejected": dict(self.rejected),
        }

    def report(self) -> dict[str, Any]:
        """What ``kerntune verify`` reads: every decision with its calls, and the table's entries."""
        return {
            "name": self.name,
            "table": self.table.path,
            "mode": self.mode,
            "disabled": self.disabled,
            "decisions": [
                {"key": d.key, "kind": d.kind, "calls": d.calls, "config": d.config, "fields": d.fields}
                for d in self._cache.values()
            ],
            "entries": {k: e["status"] for k, e in self.table.entries.items()},
            "rejected": dict(self.rejected),
            "stats": self.stats(),
        }


_REPORTED: list[Dispatcher] = []
_RECORDING: list[Dispatcher] = []


def write_untuned() -> None:
    """Append every recording dispatcher's missed keys to its ``KERNTUNE_RECORD_UNTUNED`` corpus (at exit, so a
    line carries the key's calls in this process). Idempotent: a dispatcher written is forgotten."""
    while _RECORDING:
        dispatcher = _RECORDING.pop(0)
        append_corpus(Path(dispatcher.settings.record_untuned), dispatcher.untuned())


def _report_at_exit(dispatcher: Dispatcher, folder: Path) -> None:
    if not _REPORTED:
        atexit.register(_write_reports, folder)
    _REPORTED.append(dispatcher)


def _write_reports(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    reports = [d.report() for d in _REPORTED]
    (folder / f"dispatch-{os.getpid()}.json").write_text(json.dumps(reports, indent=1))


class _Decision:
    __slots__ = ("calls", "config", "fields", "key", "kind")

    def __init__(self, config: dict[str, object], kind: str, key: str, fields: dict[str, object]) -> None:
        self.config, self.kind, self.key, self.fields, self.calls = config, kind, key, fields, 0


class _DispatchedKernel:
    def __init__(self, fn: Any, dispatcher: Dispatcher) -> None:
        self.fn, self.dispatcher = fn, dispatcher
        # A plain JITFunction is launched through its ``run`` (what ``fn[grid]`` builds a lambda to call): one
        # Python frame less per launch. Wrappers (autotuners, heuristics) keep their own ``[grid]`` path.
        self._run = fn.run if type(fn).__name__ == "JITFunction" else None

    def __getitem__(self, grid: object) -> Callable[..., object]:
        fn, run, select = self.fn, self._run, self.dispatcher.select
        if run is not None:

            def launch(*args: object, **kwargs: object) -> object:
                return run(*args, grid=grid, warmup=False, **kwargs, **select(*args, **kwargs))
        else:

            def launch(*args: object, **kwargs: object) -> object:
                return fn[grid](*args, **kwargs, **select(*args, **kwargs))

        return launch
