"""A launch's arguments on disk: tensors as safetensors (never pickle), everything else in a JSON manifest.

Tensors that share storage (views, slices, in-place outputs) form one alias group: the group's bytes are saved
once, and each tensor is rebuilt as a view of them with its dtype, shape, strides and offset, so aliasing,
strides and storage offsets survive the round trip. Scalars (ints, floats, bools, None, strings) are stored in
the manifest as they were passed.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import torch
from safetensors.torch import load_file, save_file

from kerntune.errors import UsageError

ALIGN = 16
MANIFEST = "manifest.json"
"""The capture's description beside its safetensors files."""


class ArgumentRecord(TypedDict, total=False):
    """One argument in a capture's manifest: a saved ``tensor`` (where in its group's bytes, and its layout), a
    ``scalar`` and its ``value``, or (native and Vulkan launches) a ``buffer`` and a numpy scalar's ``dtype``."""

    kind: str
    group: int
    byte_offset: int
    dtype: str
    shape: list[int]
    strides: list[int]
    value: bool | int | float | str | None
    bytes: int
    same_as: str


class SnapshotTable(TypedDict):
    """The manifest's argument table of a snapshot: each argument, and how many storage groups hold the tensors."""

    arguments: dict[str, ArgumentRecord]
    groups: int


@dataclass(frozen=True)
class TensorRecord:
    group: int
    byte_offset: int
    """From the start of the group's saved bytes."""
    dtype: str
    shape: list[int]
    strides: list[int]

    def as_dict(self) -> ArgumentRecord:
        return {
            "kind": "tensor",
            "group": self.group,
            "byte_offset": self.byte_offset,
            "dtype": self.dtype,
            "shape": self.shape,
            "strides": self.strides,
        }


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise UsageError(f"the capture names dtype {name!r}, which this torch does not have")
    return dtype


def _span(t: torch.Tensor) -> tuple[int, int]:
    """Bytes of its storage a tensor can touch: [first, last + 1)."""
    start = int(t.storage_offset()) * t.element_size()
    if t.numel() == 0:
        return start, start
    last = sum((int(size) - 1) * int(stride) for size, stride in zip(t.shape, t.stride(), strict=True))
    return start, (int(t.storage_offset()) + last + 1) * t.element_size()


def snapshot(values: Mapping[str, object], path: Path) -> tuple[SnapshotTable, str]:
    """Save ``values`` (argument name → value) under ``path`` (a .safetensors file). Returns the manifest's
    argument table and the file's SHA-256."""
    groups: dict[int, list[tuple[str, torch.Tensor]]] = {}
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            groups.setdefault(value.untyped_storage().data_ptr(), []).append((name, value))
    arguments: dict[str, ArgumentRecord] = {}
    blobs: dict[str, torch.Tensor] = {}
    for index, members in enumerate(groups.values()):
        spans = [_span(t) for _, t in members]
        start = min(s for s, _ in spans) // ALIGN * ALIGN
        end = max(e for _, e in spans)
        storage = members[0][1].untyped_storage()
        raw = torch.empty(0, dtype=torch.uint8, device=members[0][1].device).set_(storage)
        blobs[f"group{index}"] = raw[start:end].detach().cpu().clone()
        for name, t in members:
            arguments[name] = TensorRecord(
                index,
                int(t.storage_offset()) * t.element_size() - start,
                str(t.dtype).removeprefix("torch."),
                list(t.shape),
                list(t.stride()),
            ).as_dict()
    for name, value in values.items():
        if name in arguments:
            continue
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise UsageError(f"argument {name!r} is a {type(value).__name__}: the lab captures tensors and scalars")
        arguments[name] = {"kind": "scalar", "value": value}
    save_file(blobs, str(path))
    return {"arguments": arguments, "groups": len(blobs)}, hashlib.sha256(path.read_bytes()).hexdigest()


def restore(table: SnapshotTable, path: Path, device: str) -> dict[str, object]:
    """The arguments rebuilt on ``device`` in fresh allocations, aliasing as captured."""
    blobs = load_file(str(path))
    groups: dict[int, torch.Tensor] = {}
    out: dict[str, object] = {}
    for name, entry in table["arguments"].items():
        if entry["kind"] == "scalar":
            out[name] = entry["value"]
            continue
        group = entry["group"]
        if group not in groups:
            raw = blobs[f"group{group}"]
            padded = torch.zeros(-(-raw.numel() // ALIGN) * ALIGN, dtype=torch.uint8)
            padded[: raw.numel()] = raw
            groups[group] = padded.to(device)
        dtype = _dtype(entry["dtype"])
        itemsize = torch.empty(0, dtype=dtype).element_size()
        typed = groups[group].view(dtype)
        out[name] = typed.as_strided(entry["shape"], entry["strides"], entry["byte_offset"] // itemsize)
    return out


def failure(exc: BaseException) -> str:
    """A capture's own failure in one line, with where it was raised: the program's launch still runs."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"
