"""Serve a deployed table to a program never written for kerntune: per call, a library operator (``aten::mm``,
``aten::addmm``, ``aten::bmm`` and their ``.out`` forms, which ``nn.Linear`` and Inductor's extern GEMMs reach)
runs the tuned kernel of the spec a table entry names; every other call runs the library's own kernel.

    kerntune run --table T.json --spec-dir examples -- python app.py     # or, first thing in the program:
    kerntune.runtime.serve("T.json", spec_dirs=["examples"])

The specs are those given (``--spec``) or found in allowed folders (``--spec-dir``) by the name and kernel source
hash the entries are keyed by; a spec path written in the table is never imported (``spec_resolve``). An entry
whose config breaks its spec's space or constraints at its key is never served: a counted miss, named once.

How a call is decided: each spec that serves the operator (its ``Problem.serve``, ``kerntune.model.Serve``) reads
the call's shape, layout and dtype (None: it cannot take this call); the call's key — the spec's op name, its
kernel source hash, dtype, shape and device, as ``kerntune deploy`` writes it — is looked up by a ``Dispatcher``
(validators, the spec's space, production mode and ``KERNTUNE_DISPATCH=off`` apply as for any table). An exact
entry launches the spec's kernel at the entry's config; anything else (no spec takes the call, a missed key, a
rule, a table for other versions or another device, an unreadable table) calls the kernel the library had registered for
the operator before (``torch.library.get_kernel``): counted, never an error. An entry that ``kerntune deploy`` marked
``library_faster`` (its winner was not faster than the library beside it) is not served: its key is left to the
library (``Serving.left_to_library``). A served kernel that raises is a counted failure: that call and every
later call of its key run the library's kernel, and it is warned once. With ``KERNTUNE_FIRST_CALL_CHECK=1`` each
key's first served call is compared with the library's output on the same inputs, to the spec's gate threshold: a
key that fails is a counted failure the same way (``first_call``).

The served path allocates nothing beyond the operator's own output and does not synchronise the device, so it
can be captured in a CUDA graph (``torch.compile(mode="reduce-overhead")``): keys are decided while the graph
is warmed up, before capture. torch is imported when ``serve`` is called, never at import.
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from kerntune.model import Problem, Serve
from kerntune.runtime.dispatch import Dispatcher
from kerntune.runtime.first_call import LibraryKernel, Tensor, library_output, mismatch, wants_check
from kerntune.runtime.keys import DeviceFields, problem_kernel_name, problem_source_hash, torch_device_fields
from kerntune.runtime.native_gate import LIBRARY_CALL, NativeGate, ServedKernel, install_native_gate
from kerntune.runtime.notice import notify
from kerntune.runtime.spec_resolve import load_served_spec, resolve_specs
from kerntune.runtime.table import Table, load_table
from kerntune.settings import Settings

Launcher = Callable[[tuple[object, ...], dict[str, object]], object]
"""What takes a key's served calls: its positional and keyword arguments in, the operator's result out."""

__all__ = ["Serving", "cpu_device_fields", "load_served_spec", "serve"]
MODES_HELP = "explore: every entry not rejected; production: admitted entries only (fail closed)"


@dataclass
class ServedSpec:
    """One spec serving its operators: its problem, how it reads calls, and the dispatcher keyed like deploy."""

    path: str
    problem: Problem
    serve: Serve
    fields: tuple[str, ...]
    dispatcher: Dispatcher
    failed: set[tuple[object, ...]] = field(default_factory=set)
    """Keys whose served kernel raised: the library runs them from then on."""
    launchers: dict[tuple[str, tuple[object, ...]], Launcher] = field(default_factory=dict)
    """Per operator and key, the launcher that takes its served calls (``Serve.prepare``'s, or one calling
    ``Serve.run``): made at the key's first served call."""
    broken: str = ""
    """Why this spec serves nothing any more (its ``shape`` raised), or empty."""


@dataclass
class Serving:
    """What ``serve`` installed, and per operator how its calls went: ``served`` (the tuned kernel ran),
    ``library`` (the library's kernel ran: no spec took it, or its key missed), ``failed`` (the tuned kernel raised;
    the library's kernel ran instead)."""

    table: Table
    problem: str | None
    specs: list[ServedSpec]
    ops: list[str]
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    library: Any = None
    """The ``torch.library.Library`` holding the overrides; ``close()`` removes them."""
    left_to_library: list[str] = field(default_factory=list)
    """The table's entries marked ``library_faster`` by deploy: not served, the library keeps their keys."""
    outranked: list[str] = field(default_factory=list)
    """The table's entries marked ``outranked`` by deploy: another spec's entry serves their calls."""
    native: NativeGate | None = None
    """The C++ gate deciding each call (``native_gate``), or None: the Python served kernels are registered."""
    unresolved: list[str] = field(default_factory=list)
    """Specs the table's entries name that no ``--spec`` or ``--spec-dir`` spec is: the library runs their keys."""

    def stats(self) -> dict[str, Any]:
        if self.native is not None:
            self.native.sync()
        return {
            "table": self.table.path,
            "disabled": self.problem,
            "ops": {op: dict(self.counts[op]) for op in self.ops},
            "specs": {s.problem.name: s.dispatcher.stats() for s in self.specs},
            "left_to_library": self.left_to_library,
            "outranked": self.outranked,
            "gate": "python" if self.native is None else "native",
            # served forms the gate launches from C++ (a launch plan); the others call the Python served kernel
            "planned_forms": None if self.native is None else self.native.planned,
            # plans handed to C++, each checked there by at most one more launch of its kernel (kept or not)
            "plan_checks": None if self.native is None else self.native.plan_checks,
            "unresolved_specs": self.unresolved,
            "entries": len(self.table.entries) + len(self.left_to_library),
        }

    def close(self) -> None:
        """Remove the overrides: the library's kernels take every call again."""
        if self.library is not None:
            self.library._destroy()
            self.library = None
        if self.native is not None:
            self.native.close()
            self.native = None
        if self in _ACTIVE:
            _ACTIVE.remove(self)


_ACTIVE: list[Serving] = []
"""Every installed serving: torch removes a Library's registrations when the object is collected, so a program
that calls ``serve(...)`` without keeping the result must still be served."""


def cpu_device_fields() -> DeviceFields:
    """The device fields of a key served on the CPU (the Triton interpreter; tests)."""
    return {"arch": "cpu", "compute_units": os.cpu_count() or 1, "device_name": "cpu"}


def serve(
    table: str | Path,
    *,
    specs: Sequence[str | Path] = (),
    spec_dirs: Sequence[str | Path] = (),
    mode: str = "explore",
    backend: str = "CUDA",
    device: Mapping[str, object] | None = None,
    settings: Settings | None = None,
) -> Serving:
    """Install the table's tuned kernels behind the library operators their specs serve; returns what was
    installed and its per-call counts. ``specs``: spec files or folders, each served; ``spec_dirs``: folders
    where a spec the table's entries name (by name and kernel source hash) may be found. A spec path written in
    the table is never imported. Each entry's config is checked against its spec's space and constraints at
    its key: one that breaks them is never served (``stats()["specs"][NAME]["rejected"]``). ``backend``: the
    dispatch key overridden (``CUDA``; ``CPU`` for the interpreter). ``device``: the device fields of every key
    (default: torch's view of the current GPU, or ``cpu_device_fields``)."""
    import torch

    if _ACTIVE:  # torch (2.11) refuses a second Python override of one operator; one serving decides each call
        raise ValueError(
            f"kerntune serve: {_ACTIVE[0].table.path} is already served in this process; close() its "
            "Serving before serving another table"
        )
    settings = settings or Settings.from_env()
    loaded, problem = load_table(table)
    # deploy marks an entry library_faster (the library beat it) or outranked (another spec's entry for the
    # same call was faster): neither is served.
    left = sorted(k for k, e in loaded.entries.items() if e.get("library_faster"))
    outranked = sorted(k for k, e in loaded.entries.items() if e.get("outranked") and not e.get("library_faster"))
    loaded = replace(loaded, entries={k: e for k, e in loaded.entries.items() if k not in {*left, *outranked}})
    if not hasattr(torch.library, "get_kernel"):  # torch < 2.9: the library's kernel could not be called back
        notify(
            f"kerntune serve: torch {torch.__version__} has no torch.library.get_kernel (2.9 and newer "
            "have it); nothing is served, the library runs every call"
        )
        return Serving(loaded, "torch.library.get_kernel is missing", [], [], left_to_library=left, outranked=outranked)
    if problem is not None:
        notify(f"kerntune serve: {problem}; the library runs every call")
    if device is None:
        device = torch_device_fields() if backend == "CUDA" else cpu_device_fields()
    resolved = resolve_specs(loaded, specs, spec_dirs)
    served: list[ServedSpec] = []
    for path, spec in resolved.specs:
        assert spec.serve is not None
        fields = spec.shape_fields()
        dispatcher = Dispatcher(
            loaded,
            key=_no_key,
            key_fields=("dtype", *fields),
            default={},
            mode=mode,
            settings=settings,
            name=spec.serve.kernel or problem_kernel_name(spec),
            device={**device, "op": spec.name, "source": problem_source_hash(spec)},
            space=spec.space,
        )
        served.append(ServedSpec(path, spec, spec.serve, fields, dispatcher))
    ops = sorted({op for s in served for op in s.serve.ops})
    serving = Serving(
        loaded,
        problem,
        served,
        ops,
        {op: Counter(served=0, library=0, failed=0) for op in ops},
        left_to_library=left,
        outranked=outranked,
        unresolved=resolved.unresolved,
    )
    if ops:
        serving.native = _native_gate(serving, backend, settings)
    if ops and serving.native is None:
        serving.library = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
        with warnings.catch_warnings():
            # torch warns once that aten kernels are overridden; replacing them is the point (and reversible).
            warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
            for op in ops:
                namespace, _, name = op.partition("::")
                if namespace != "aten":
                    raise ValueError(f"serve overrides aten operators; {op!r} is not one")
                original = torch.library.get_kernel(op, backend)
                serving.library.impl(
                    name,
                    _served_kernel(op, original, [s for s in served if op in s.serve.ops], serving.counts[op]),
                    backend,
                    with_keyset=True,
                )
    if ops:
        _ACTIVE.append(serving)
    return serving


def _native_gate(serving: Serving, backend: str, settings: Settings) -> NativeGate | None:
    """The served operators decided in C++ (``native_gate``), calling these Python served kernels back for
    forms they serve and first calls; None where the gate is off or cannot be built or installed. The first-call
    check (``KERNTUNE_FIRST_CALL_CHECK``) compares a served call with the library's own output, which the gate's
    Python kernels cannot call: with it on, the Python served kernels take every call."""
    if settings.first_call_check:
        return None
    by_op = {op: [s for s in serving.specs if op in s.serve.ops] for op in serving.ops}
    kernels = {op: _served_kernel(op, LIBRARY_CALL, specs, serving.counts[op]) for op, specs in by_op.items()}
    return install_native_gate(kernels, dict(by_op), serving.counts, backend, settings)


def _no_key(*args: object) -> tuple[object, ...]:
    raise TypeError("a served spec's dispatcher is looked up by key tuple (Dispatcher.lookup), never called")


def _launcher(op: str, s: ServedSpec, raw: tuple[Any, ...], config: Mapping[str, object]) -> Launcher:
    """What takes a key's served calls: the spec's prepared launcher, or its ``run`` at the key's shape."""
    shape = dict(zip(s.fields, raw[1:], strict=True))
    if s.serve.prepare is not None:
        return s.serve.prepare(op, shape, config)
    run = s.serve.run
    return lambda args, kwargs: run(op, shape, config, args, kwargs)


def _served_kernel(op: str, original: LibraryKernel, specs: list[ServedSpec], counts: Counter[str]) -> ServedKernel:
    """The kernel registered for ``op``: the first spec whose exact entry holds the call runs it. Every call is
    counted once: ``served``, ``failed`` (a spec raised; the library ran it) or ``library``."""

    def kernel(keyset: object, *args: object, **kwargs: object) -> object:
        outcome = "library"
        for s in specs:
            if s.broken:
                continue
            try:
                raw = s.serve.shape(op, args, kwargs)
                config = None if raw is None else s.dispatcher.lookup(raw)
            except Exception as exc:  # a spec's reader that raises (or a key of the wrong length) serves nothing
                s.broken, outcome = f"{type(exc).__name__}: {exc}", "failed"
                notify(
                    f"kerntune serve: {s.problem.name} could not read an {op} call ({s.broken}); the library "
                    "runs its calls from now on"
                )
                continue
            if raw is None or config is None or raw in s.failed:
                continue
            try:
                launcher = s.launchers.get((op, raw))
                first = launcher is None
                if launcher is None:
                    launcher = s.launchers[op, raw] = _launcher(op, s, raw, config)
                result = launcher(args, kwargs)
                d = s.dispatcher
                if first and wants_check(d.settings.first_call_check, d.mode, d.entry_for(raw)):
                    # An operator's outputs are tensors: what the check compares.
                    got, expected = cast(Tensor, result), cast(Tensor, library_output(original, keyset, args, kwargs))
                    wrong = mismatch(got, expected, str(raw[0]), s.problem.tolerance)
                    if wrong is not None:
                        s.failed.add(raw)
                        counts["failed"] += 1
                        notify(
                            f"kerntune serve: {s.problem.name}'s first call at "
                            f"{dict(zip(s.fields, raw[1:], strict=False))} failed the first-call check ({wrong}); "
                            "the library runs this key from now on"
                        )
                        return got.copy_(expected) if "out" in kwargs else expected
            except Exception as exc:  # a served kernel that fails must never take the program down
                s.failed.add(raw)
                outcome = "failed"
                notify(
                    f"kerntune serve: {s.problem.name} failed at {dict(zip(s.fields, raw[1:], strict=False))} "
                    f"({type(exc).__name__}: {exc}); the library runs this key from now on"
                )
                break
            counts["served"] += 1
            return result
        counts[outcome] += 1
        return original.call_boxed(keyset, *args, **kwargs)

    return kernel
