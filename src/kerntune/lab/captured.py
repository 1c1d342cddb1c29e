"""A captured call rebuilt for replay: its arguments in fresh allocations (aliasing as captured), pristine copies
to restore before each timed launch, and the timing every replay mode shares (``lab.replay``); ``TritonLaunch``
makes the call a Triton launch, ``lab.operator_launch.OperatorLaunch`` a library operator's call."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from kerntune.lab.manifest import Manifest
from kerntune.lab.snapshot import SnapshotTable, restore
from kerntune.settings import Settings


class CapturedCall:
    """A captured call rebuilt: its arguments in fresh allocations on ``device`` (aliasing as captured), pristine
    copies to restore, and the timing every replay mode shares; subclasses say how the call is made (``run``)."""

    def __init__(self, manifest: Manifest, folder: Path, device: str, claims_timing: bool) -> None:
        self.manifest, self.claims_timing = manifest, claims_timing
        table = SnapshotTable(arguments=manifest["arguments"], groups=manifest.get("groups", 0))
        self.values = restore(table, folder / "inputs.safetensors", device)
        self.tensors = {n: v for n, v in self.values.items() if isinstance(v, torch.Tensor)}
        bases: dict[int, torch.Tensor] = {}
        for t in self.tensors.values():
            bases.setdefault(t.untyped_storage().data_ptr(), t)
        self.groups = [
            torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage()) for t in bases.values()
        ]
        self.pristine = [g.clone() for g in self.groups]
        self._flush: torch.Tensor | None = None
        positional = manifest["positional"]
        self.args = [self.values[n] for n in positional]
        self.kwargs = {**{n: v for n, v in self.values.items() if n not in positional}, **manifest["options"]}

    def reset(self) -> None:
        for group, clean in zip(self.groups, self.pristine, strict=True):
            group.copy_(clean)

    def run(self) -> object:
        raise NotImplementedError

    def state(self) -> list[torch.Tensor]:
        return [g.clone() for g in self.groups]

    def times(self, iterations: int, restore_each: bool) -> list[float]:
        """Device milliseconds of ``iterations`` launches (CUDA events), or host milliseconds when no timing is
        claimed. ``restore_each``: the inputs are restored, then L2 flushed, before each launch, on the stream
        ahead of its start event — never inside a sample. Hazards guarded: a restore leaves the inputs in L2 (a
        warm time under an "isolated" name; hence the flush, as the tuner's cold regime), and Triton's Python
        launch path (tens of µs) leaves the device idle between the start event and the kernel (hence the
        stream hold: the whole batch is enqueued behind a spinning kernel, then runs back to back)."""
        if not self.claims_timing:
            out = []
            for _ in range(iterations):
                if restore_each:
                    self.reset()
                began = time.perf_counter()
                self.run()
                out.append((time.perf_counter() - began) * 1e3)
            return out
        from kerntune.backends.stream_hold import StreamHold

        flush = self.flush_buffer()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]  # type: ignore[no-untyped-call]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]  # type: ignore[no-untyped-call]

        def enqueue(i: int) -> None:
            if restore_each:
                self.reset()
                flush.zero_()
            starts[i].record()
            self.run()
            ends[i].record()

        StreamHold(self.groups[0].device).timed(iterations, enqueue)
        return [float(a.elapsed_time(b)) for a, b in zip(starts, ends, strict=True)]

    def flush_buffer(self) -> torch.Tensor:
        """The flush (twice the device's L2, 64 MiB at least, or KERNTUNE_FLUSH_MB), zeroed before a cold launch to
        evict what the restore left."""
        if self._flush is None:
            l2 = int(getattr(torch.cuda.get_device_properties(self.groups[0].device), "L2_cache_size", 0) or 0)
            size = Settings.from_env().flush_bytes(l2, 64 << 20)
            self._flush = torch.empty(size, dtype=torch.uint8, device=self.groups[0].device)
        return self._flush

    def cache(self, restore_each: bool) -> str:
        if not self.claims_timing:
            return "not controlled (no timing claimed)"
        return "cold: L2 flushed after each restore" if restore_each else "warm: launches back to back"

    def outputs(self) -> dict[str, torch.Tensor]:
        return {n: t.detach().cpu() for n, t in self.tensors.items()}

    def expected(self, folder: Path) -> dict[str, torch.Tensor]:
        table = self.manifest.get("outputs_table") or SnapshotTable(
            arguments=self.manifest["arguments"], groups=self.manifest.get("groups", 0)
        )  # an operator's outputs add its result
        return {
            n: t
            for n, t in restore(table, folder / "outputs.safetensors", "cpu").items()
            if isinstance(t, torch.Tensor)
        }

    def aliased(self) -> list[str]:
        owners = [t.untyped_storage().data_ptr() for t in self.tensors.values()]
        return [n for n, t in self.tensors.items() if owners.count(t.untyped_storage().data_ptr()) > 1]


class TritonLaunch(CapturedCall):
    """A Triton launch rebuilt: ``fn[grid](...)`` on fresh allocations; timed by CUDA events on a GPU, untimed in
    the interpreter."""

    def __init__(self, manifest: Manifest, folder: Path, fn: Any, device: str) -> None:
        super().__init__(manifest, folder, device, device == "cuda" and not manifest.get("interpreted"))
        self.fn = fn

    def run(self) -> object:
        return self.fn[tuple(self.manifest["grid"])](*self.args, **self.kwargs)
