"""Capture one call of a library operator (``aten::mm``, ``aten::addmm``, any ``aten::`` overload) from a program
never written for kerntune: ``kerntune lab capture --kernel aten::mm --nth 3 [--match 16x4096] -- python app.py``.

The operator's CPU and CUDA kernels are overridden for the program's run (``torch.library``, as ``kerntune run``
serves a table); every call runs the kernel the library had registered (``torch.library.get_kernel``), and the
``nth`` call whose description matches ``--match`` is saved around it: its arguments before the call
(``inputs.safetensors``, by the schema's argument names) and after it with its result (``outputs.safetensors``:
what the library computed, which a replay must reproduce). ``aten::mm`` names the default overload and its
``.out`` form (the extern GEMM Inductor's compiled code calls); ``aten::mm.out`` names one overload.

A call's description is its overload and each tensor argument as ``ROWSxCOLS:dtype``, with ``:T`` for a transpose
view (``nn.Linear``'s weight): ``aten::mm(16x4096:bfloat16, 4096x14336:bfloat16:T)``. Calls made while a CUDA
graph is being captured are never saved (a copy to the host cannot be captured) and are counted apart.

Hazard guarded: the capture must never take the program down. A snapshot that fails is recorded in the state's
``errors`` and the call still runs the library's kernel.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from kerntune.errors import UsageError
from kerntune.lab.manifest import DeviceRecord, Manifest
from kerntune.lab.snapshot import snapshot

OPERATOR_KEYS = ("CPU", "CUDA")
"""The dispatch keys overridden: the library kernels a program's tensors reach."""


def is_operator(name: str) -> bool:
    return "::" in name


def overloads(name: str) -> list[str]:
    """The qualified overloads ``name`` selects: ``aten::mm`` → ``aten::mm`` and ``aten::mm.out``."""
    namespace, _, rest = name.partition("::")
    op, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, namespace, None), op, None) if namespace and op else None
    if packet is None or not hasattr(packet, "overloads"):
        raise UsageError(
            f"--kernel {name}: no operator of that name in torch {torch.__version__} (write it as the "
            "profiler does: aten::mm, aten::addmm, aten::mm.out)"
        )
    found = packet.overloads()
    if overload:
        if overload not in found:
            raise UsageError(f"--kernel {name}: {namespace}::{op} has the overloads {', '.join(found)}")
        return [name]
    return [f"{namespace}::{op}"] + ([f"{namespace}::{op}.out"] if "out" in found else [])


def resolve(qualified: str) -> torch._ops.OpOverload:
    """The ``torch.ops`` overload object of ``aten::mm`` / ``aten::mm.out``."""
    namespace, _, rest = qualified.partition("::")
    op, _, overload = rest.partition(".")
    found: torch._ops.OpOverload = getattr(getattr(getattr(torch.ops, namespace), op), overload or "default")
    return found


def bind(qualified: str, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[dict[str, object], list[str]]:
    """The call's arguments by the schema's names, and the names passed positionally."""
    names = [a.name for a in resolve(qualified)._schema.arguments]
    return {**dict(zip(names, args, strict=False)), **kwargs}, names[: len(args)]


def _tensor_text(t: torch.Tensor) -> str:
    dims = "x".join(str(int(d)) for d in t.shape)
    transposed = t.dim() >= 2 and t.stride(-2) == 1 and t.stride(-1) != 1
    return f"{dims}:{str(t.dtype).removeprefix('torch.')}" + (":T" if transposed else "")


def describe(qualified: str, args: tuple[object, ...], kwargs: dict[str, object]) -> str:
    """``aten::mm(16x4096:bfloat16, 4096x14336:bfloat16:T)``: what ``--match`` is searched in."""
    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
    return f"{qualified}({', '.join(_tensor_text(t) for t in tensors)})"


def match_for(line: dict[str, Any]) -> str:
    """The ``--match`` pattern selecting the calls of one GEMM line of ``kerntune scope`` (or its corpus): op, shape,
    dtype and layout as ``describe`` writes them (``aten::mm`` and ``aten::addmm``, either form; another op is
    matched by its name alone)."""
    op = str(line.get("op", ""))
    shape, dtype, layout = line.get("shape") or {}, str(line.get("dtype", "")), str(line.get("layout") or "NN")
    name = re.escape(op.removesuffix(".out")) + r"(\.out)?\("
    if op.removesuffix(".out") not in ("aten::mm", "aten::addmm") or not {"M", "N", "K"} <= set(shape):
        return "^" + name
    a = f"{shape['M']}x{shape['K']}:{dtype}" + (":T" if layout[:1] == "T" else "")
    b = f"{shape['K']}x{shape['N']}:{dtype}" + (":T" if layout[1:2] == "T" else "")
    bias = "[^,]+, " if op.startswith("aten::addmm") else ""
    return f"^{name}{bias}{re.escape(a)}, {re.escape(b)}(,|\\))"


class OperatorState:
    """What an operator capture saw: matching calls counted, the manifest once written, every call's description
    counted (what a miss names), calls skipped inside CUDA graph capture, and snapshot errors."""

    def __init__(
        self,
        name: str,
        nth: int,
        out: Path,
        match: str,
        header: Manifest,
        device_of: Callable[[Mapping[str, object]], DeviceRecord],
        limit_bytes: int,
    ) -> None:
        self.name, self.nth, self.out, self.header, self.device_of = name, nth, out, header, device_of
        self.pattern = re.compile(match or "")  # checked by capture.check_selection
        self.limit_bytes = limit_bytes
        self.seen = 0
        self.manifest: Manifest | None = None
        self.calls: Counter[str] = Counter()
        self.in_graph_capture = 0
        self.errors: list[str] = []
        self.refused = ""
        """Why the matched call was not saved (over the size limit), or empty."""

    def summary(self) -> dict[str, object]:
        return {
            "captured": self.manifest is not None,
            "seen": self.seen,
            "calls": dict(self.calls.most_common(20)),
            "refused": self.refused,
            "errors": self.errors[:5],
            "in_graph_capture": self.in_graph_capture,
        }

    def before(self, qualified: str, args: tuple[object, ...], kwargs: dict[str, object]) -> Manifest | None:
        """The manifest to complete after the call when this is the call to save, else None."""
        if self.manifest is not None or self.refused:
            return None
        text = describe(qualified, args, kwargs)
        if len(self.calls) < 256 or text in self.calls:
            self.calls[text] += 1
        if not self.pattern.search(text):
            return None
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            self.in_graph_capture += 1
            return None
        self.seen += 1
        if self.seen != self.nth:
            return None
        values, positional = bind(qualified, args, kwargs)
        self.refused = too_large(values, self.limit_bytes, text)
        if self.refused:
            return None
        self.out.mkdir(parents=True, exist_ok=True)
        table, sha = snapshot(values, self.out / "inputs.safetensors")
        return {
            **self.header,
            "kernel": {
                "language": "aten",
                "name": self.name,
                "overload": qualified,
                "schema": str(resolve(qualified)._schema),
                "call": text,
            },
            "grid": [],
            "options": {},
            "positional": positional,
            **table,
            "inputs_sha256": sha,
            "interpreted": False,
            "device": self.device_of(values),
        }

    def after(
        self,
        manifest: Manifest,
        qualified: str,
        args: tuple[object, ...],
        kwargs: dict[str, object],
        result: object,
    ) -> None:
        values, _ = bind(qualified, args, kwargs)
        if isinstance(result, torch.Tensor):
            values["result"] = result
        table, _ = snapshot(values, self.out / "outputs.safetensors")
        manifest["outputs_table"] = table
        (self.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
        self.manifest = manifest


def too_large(values: dict[str, object], limit_bytes: int, what: str) -> str:
    """Why ``values`` are too large to capture (their tensors' bytes over ``limit_bytes``), or empty."""
    size = sum(v.numel() * v.element_size() for v in values.values() if isinstance(v, torch.Tensor))
    if size <= limit_bytes:
        return ""
    return (
        f"{what} holds {size / 2**20:.1f} MiB of tensors, over the capture limit of {limit_bytes / 2**20:.0f} "
        "MiB (KERNTUNE_CAPTURE_MAX_MB): nothing written"
    )


def arm(state: OperatorState) -> Callable[[], None]:
    """Override the operator's CPU and CUDA kernels for the capture; returns the function that removes them."""
    if not hasattr(torch.library, "get_kernel"):
        raise UsageError(
            f"capturing an operator needs torch.library.get_kernel (torch 2.9 or newer); this is "
            f"torch {torch.__version__}"
        )
    library: Any = torch.library.Library(state.name.partition("::")[0], "IMPL")  # type: ignore[no-untyped-call]
    with warnings.catch_warnings():
        # torch warns once that aten kernels are overridden; for the capture that is the point (and reversible).
        warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
        for qualified in overloads(state.name):
            for key in OPERATOR_KEYS:
                try:
                    original = torch.library.get_kernel(qualified, key)
                except RuntimeError:  # no kernel for this key in this build (a CPU-only torch has CUDA's)
                    continue
                library.impl(qualified.partition("::")[2], _kernel(state, qualified, original), key, with_keyset=True)
    return library._destroy  # type: ignore[no-any-return]


def _kernel(state: OperatorState, qualified: str, original: Any) -> Callable[..., object]:
    def kernel(keyset: object, *args: object, **kwargs: object) -> object:
        try:
            manifest = state.before(qualified, args, kwargs)
        except Exception as exc:  # a capture that fails is said, never the program's failure
            state.errors.append(f"{type(exc).__name__}: {exc}")
            manifest = None
        result = original.call_boxed(keyset, *args, **kwargs)
        if manifest is not None:
            try:
                state.after(manifest, qualified, args, kwargs, result)
            except Exception as exc:
                state.errors.append(f"{type(exc).__name__}: {exc}")
        return result

    return kernel
