"""The native gate: the served operators' per-call decision in C++ (``native/served_gate.cpp``).

``serve`` registers the gate's C++ kernel for the operators its specs serve when it can be built; otherwise the
Python served kernel stays, and why is warned once per process. The gate reads each call's form (every tensor's
dtype, device, layout, sizes, strides and alignment class up to 16 bytes; every scalar's value) and looks it up in a
C++ hash map:

- a form decided as a miss runs the library's kernel from C++ and is counted there: no Python, no allocation, no
  device synchronisation;
- a form decided as served calls the Python served kernel, which launches the tuned kernel and counts the call.
  At that form's first such call the gate records the launch the served kernel made
  (``kerntune.runtime.launch_plan``); where it is one launch of a compiled Triton kernel whose every parameter is
  a call tensor's pointer, the output's, a TMA descriptor of one of them, or a value the form fixes (``plan_of``),
  and launching that plan from C++ reproduces the call's output bit for bit, later calls of the form launch it
  from C++ through the CUDA driver:
  the output allocated by torch's caching allocator, on torch's current stream, no Python;
- a form not seen yet runs through the Python served kernel once (the spec's ``shape`` and the table's dispatcher
  decide it; its call is counted there), and its decision is kept for every later call of that form.

A spec's ``Serve.shape`` must therefore decide from the call's form alone, which every shape reader of the
library operators does. Calls counted in C++ reach ``Serving.stats()`` and the dispatchers' reports through
``NativeGate.sync``, which ``stats`` and ``close`` call, and which runs at exit before the dispatchers write.

The gate is built once per source and torch version with ``torch.utils.cpp_extension`` and the C++ compiler torch
uses (``CXX``, default ``c++``), into ``KERNTUNE_NATIVE_CACHE`` (default ``~/.cache/kerntune/native``).
``KERNTUNE_NATIVE_GATE=off`` keeps the Python path. torch is imported only when the gate is built.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import kerntune.runtime.launch_plan as launch_plan
from kerntune.model import Serve
from kerntune.runtime.dispatch import Dispatcher
from kerntune.runtime.launch_plan import plan_of
from kerntune.settings import Settings

SOURCE = Path(__file__).resolve().parent / "native" / "served_gate.cpp"
DEFAULT_CACHE = Path.home() / ".cache" / "kerntune" / "native"

LIBRARY = object()
"""What a served kernel the gate calls returns where the library's kernel must run the call."""


class _LibraryCall:
    """Stands for the library's kernel in the Python served kernel the gate calls back: the gate runs the
    library's kernel itself, from C++, on the call's own dispatch keys."""

    def call_boxed(self, keyset: object, *args: object, **kwargs: object) -> object:
        return LIBRARY


LIBRARY_CALL = _LibraryCall()

ServedKernel = Callable[..., object]
"""A Python served kernel: ``(keyset, *args, **kwargs) -> result``, counting its call."""


class GateSpec(Protocol):
    """What the gate reads of a served spec (``serving.ServedSpec``) to decide a form once."""

    @property
    def serve(self) -> Serve: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def broken(self) -> str: ...
    @property
    def failed(self) -> set[tuple[object, ...]]: ...
    @property
    def launchers(self) -> Mapping[tuple[str, tuple[object, ...]], object]: ...


@dataclass
class _Form:
    """A decided form: the dispatcher keys each of its calls counted in C++ counts toward, the calls synced, and
    for a served form whether a plan was tried and the tensors its plan points at (kept alive with it)."""

    counted: list[tuple[Dispatcher, tuple[object, ...]]]
    synced: int = 0
    plan_tried: bool = False
    kept: list[object] = field(default_factory=list)


@dataclass(repr=False, eq=False)
class NativeGate:
    """The installed gate: the built module, the Python served kernels it calls back, and what it counted."""

    module: Any
    """The built extension (``served_gate.cpp``); its functions are untyped."""
    kernels: dict[str, ServedKernel]
    specs: dict[str, list[GateSpec]]
    counts: dict[str, Counter[str]]
    names: list[str] = field(default_factory=list)
    forms: list[_Form] = field(default_factory=list)
    ops_synced: list[tuple[int, int, int]] = field(default_factory=list)
    """Per operator, the (library, served, failed) calls C++ had counted at the last sync."""
    planned: int = 0
    """Forms launched from C++ by a plan, at the last sync."""
    plan_checks: int = 0
    """Plans handed to C++. Each one C++ can encode is checked there by one more launch of its kernel, at its
    form's planning call: at most one extra launch a plan."""

    def first(self, index: int, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[int, bool, object]:
        """A form's first call (from C++): run it through the Python served kernel, which counts it, and decide
        the form. Returns (form id, or -1 where it cannot be decided once; served; result, or None where the
        library's kernel must run the call)."""
        op = self.names[index]
        result = self.kernels[op](None, *args, **kwargs)
        try:
            served, counted = self._decide(op, args, kwargs)
        except Exception:  # a shape reader that raises now was marked broken by the kernel: decide every call
            return -1, False, None if result is LIBRARY else result
        self.forms.append(_Form(counted))
        # The dispatchers write their reports and untuned keys at exit, registering that when they first miss;
        # this sync must run before them, so it is registered again after each first call (atexit runs LIFO).
        atexit.unregister(self.sync)
        atexit.register(self.sync)
        return len(self.forms) - 1, served, None if result is LIBRARY else result

    def served(
        self, index: int, form_id: int, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> tuple[object, tuple[object, ...] | None]:
        """A served form's call (from C++): the Python served kernel launches and counts it. Returns (result, or
        None where it ran no kernel: it failed, the library's kernel runs the call and the form is decided again;
        the form's launch plan as a tuple, made at its first served call here, or None)."""
        kernel, form = self.kernels[self.names[index]], self.forms[form_id]
        if form.plan_tried or not self._may_plan():
            result = kernel(None, *args, **kwargs)
            return (None if result is LIBRARY else result), None
        form.plan_tried = True
        recorded: list[launch_plan.DirectLaunch] = []
        launch_plan.recording = recorded
        try:
            result = kernel(None, *args, **kwargs)
        finally:
            launch_plan.recording = None
        if result is LIBRARY:
            return None, None
        plan = None
        if len(recorded) == 1:
            with contextlib.suppress(Exception):  # a launch another Triton records differently: no plan
                plan = plan_of(recorded[0], args, result, kwargs.get("out"))
        if plan is None:
            return result, None
        form.kept = plan.kept
        self.plan_checks += 1
        return result, plan.as_tuple()

    def _may_plan(self) -> bool:
        """Plans are made where the CUDA driver is loaded and the stream is not being captured (a plan is checked
        against the served kernel's output, which synchronises the device)."""
        if not self.module.can_launch():
            return False
        torch = sys.modules.get("torch")
        try:
            return torch is not None and not torch.cuda.is_current_stream_capturing()
        except Exception:
            return False

    def _decide(
        self, op: str, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> tuple[bool, list[tuple[Dispatcher, tuple[object, ...]]]]:
        """Whether the served kernel takes this form, as it just decided (the first spec with a working
        launcher for its key), and the dispatcher keys its lookups counted."""
        counted = []
        for s in self.specs[op]:
            if s.broken:
                continue
            raw = s.serve.shape(op, args, kwargs)
            if raw is None:
                continue
            counted.append((s.dispatcher, raw))
            if raw not in s.failed and (op, raw) in s.launchers:
                return True, counted
        return False, counted

    def sync(self) -> None:
        """Hand the calls counted in C++ since the last sync to the operators' counts and the dispatchers."""
        forms, ops = self.module.counts()
        self.planned = 0
        for form_id, calls, planned in forms:
            form = self.forms[form_id]
            delta, form.synced = calls - form.synced, calls
            self.planned += bool(planned)
            for dispatcher, raw in form.counted:
                dispatcher.add_calls(raw, delta)
        for index, totals in enumerate(ops):
            op = self.names[index]
            for outcome, total, synced in zip(
                ("library", "served", "failed"), totals, self.ops_synced[index], strict=True
            ):
                if op in self.counts:
                    self.counts[op][outcome] += total - synced
            self.ops_synced[index] = tuple(totals)

    def close(self) -> None:
        """Count what C++ counted, then remove the gate: the library's kernels take every call again."""
        self.sync()
        self.module.uninstall()
        atexit.unregister(self.sync)


_BUILT: dict[str, Any] = {}
"""The built module per process (None once a build failed: warned once, never retried)."""


def _warn(message: str) -> None:
    with contextlib.suppress(Exception):  # a program that turns warnings into errors must still be served
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def build_gate(settings: Settings) -> Any:
    """The built gate module, or None (``KERNTUNE_NATIVE_GATE=off``; or the build failed, warned once)."""
    if settings.native_gate == "off":
        return None
    if "module" in _BUILT:
        return _BUILT["module"]
    _BUILT["module"] = None
    try:
        import torch
        from torch.utils import cpp_extension

        tag = hashlib.sha256(SOURCE.read_bytes() + f"{torch.__version__} {sys.version}".encode()).hexdigest()[:16]
        name = f"kerntune_served_gate_{tag}"
        folder = Path(settings.native_cache or DEFAULT_CACHE) / name
        folder.mkdir(parents=True, exist_ok=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's notes on the compiler's ABI: the build's outcome is what counts
            _BUILT["module"] = cpp_extension.load(
                name=name, sources=[str(SOURCE)], build_directory=str(folder), extra_cflags=["-O2"], verbose=False
            )
    except Exception as exc:  # no compiler, no headers, a torch whose internals moved: the Python path stays
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
        _warn(f"kerntune serve: the native gate was not built ({why}); served operators take the Python path")
    return _BUILT["module"]


def install_native_gate(
    kernels: dict[str, ServedKernel],
    specs: dict[str, Sequence[GateSpec]],
    counts: dict[str, Counter[str]],
    backend: str,
    settings: Settings,
) -> NativeGate | None:
    """Register the gate for every operator in ``kernels`` at ``backend`` (a dispatch key), calling back those
    Python served kernels (made with ``LIBRARY_CALL`` as the library's kernel); None where it cannot be (not
    built, an operator it does not take, a registration torch refused: warned): the caller registers the Python
    kernels instead."""
    module = build_gate(settings)
    if module is None:
        return None
    names = list(module.op_names())
    if not set(kernels) <= set(names):
        return None  # an operator the gate does not take: every operator stays on the Python path
    gate = NativeGate(
        module, kernels, {op: list(s) for op, s in specs.items()}, counts, names, ops_synced=[(0, 0, 0)] * len(names)
    )
    try:
        module.install(sorted(kernels), backend, gate.first, gate.served)
    except Exception as exc:
        with contextlib.suppress(Exception):
            module.uninstall()
        _warn(
            f"kerntune serve: the native gate was not installed ({type(exc).__name__}: {exc}); served operators "
            "take the Python path"
        )
        return None
    return gate
