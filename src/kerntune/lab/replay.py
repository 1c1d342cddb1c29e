"""Replay a captured launch in isolation, in one of three modes, and validate what it computes.

- ``isolated``: every timed iteration starts from pristine copies of the captured inputs, restored and then the
  L2 flushed outside the timed region (cold, as the tuner's default regime); device events bracket one launch.
  The default.
- ``sustained``: one restore, then launches back to back, each bracketed by events: a kernel kept busy. Refused
  when the launch reads memory it writes — a second launch on the first one's memory changes it again — since
  it would then time another computation; arguments sharing storage are named in the refusal and the result.
- ``replays``: the whole isolated replay ``repeats`` times, each from fresh allocations; the spread of the
  per-replay means shows how much placement moves the time.

On a GPU the batch of timed launches is enqueued behind a stream hold (``backends/stream_hold.py``), so Triton's
host launch path never shows up as device time. Timing is claimed only on a GPU (CUDA events) and for OpenCL
profiling events; in Triton's interpreter the launch runs and is validated, and the result says
``timing_claimed: false``. The result records the mode that ran (``check_mode`` refuses one that differs from
the request) and the cache state its samples saw.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, TypedDict

import torch

from kerntune.errors import UsageError
from kerntune.lab.capture import FORMAT, device_of
from kerntune.lab.captured import TritonLaunch
from kerntune.lab.inspect_launch import launch_resources
from kerntune.lab.manifest import Manifest
from kerntune.lab.snapshot import MANIFEST
from kerntune.lab.variant import require_signature
from kerntune.measure.second_timer import TimerCheck
from kerntune.measure.stats import PairRatio, pair_ratio

MODES = ("isolated", "sustained", "replays")


def load_capture(folder: Path) -> Manifest:
    """The capture's manifest, refused when it is not one, was closed, or its inputs changed since."""
    try:
        manifest: Manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{folder} is not a readable kerntune capture ({exc}): make one with kerntune lab capture"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != 1:
        raise UsageError(f"{folder / MANIFEST} is not a kerntune capture manifest (version 1)")
    if manifest.get("closed"):
        raise UsageError(f"{folder} was closed: its inputs were deleted; capture the launch again")
    inputs = folder / "inputs.safetensors"
    try:
        sha = hashlib.sha256(inputs.read_bytes()).hexdigest()
    except OSError as exc:
        raise UsageError(f"{inputs} cannot be read ({exc}): the capture is incomplete") from exc
    if sha != manifest.get("inputs_sha256"):
        raise UsageError(f"{inputs} does not match its manifest (corrupted or edited): capture the launch again")
    return manifest


def check_device(manifest: Manifest) -> str:
    """The device to replay on: the captured one's kind, refused when this machine's differs."""
    captured = manifest["device"]
    if captured["type"] == "vulkan":
        from kerntune.lab.vulkan import check_device as vulkan_device

        return vulkan_device(manifest)
    if captured["type"] == "opencl":
        from kerntune.lab.opencl import find_device

        find_device(captured["name"])  # refused when this machine lacks it
        return "opencl"
    if captured["type"] != "cuda":
        return "cpu"
    if not torch.cuda.is_available():
        raise UsageError(f"captured on {captured['name']} ({captured['arch']}); this machine has no GPU")
    here = device_of({"x": torch.empty(1, device="cuda")})
    if (here["name"], here["arch"]) != (captured["name"], captured["arch"]):
        raise UsageError(
            f"captured on {captured['name']} ({captured['arch']}), this is {here['name']} "
            f"({here['arch']}): replay where it was captured, or capture again here"
        )
    return "cuda"


def load_kernel(manifest: Manifest, variant: Path | None = None) -> Any:
    """The captured kernel (from its file) or a variant (a Python file defining a kernel of the same name and
    argument names; for OpenCL and native CUDA / HIP kernels, a source file, and the source text is returned); a
    variant with another signature is refused."""
    identity = manifest["kernel"]
    if identity["language"] == "opencl":
        from kerntune.lab.opencl import load_source

        return load_source(manifest, variant)
    if identity["language"] in ("cuda", "hip"):  # source text, compiled again by the backend
        from kerntune.lab.native import load_source as native_source

        return native_source(manifest, variant)
    if identity["language"] == "vulkan":  # GLSL text (or the kept SPIR-V), compiled again by the backend
        from kerntune.lab.vulkan import load_source as vulkan_source

        return vulkan_source(manifest, variant)
    if identity["language"] == "aten":  # the library's kernel, chosen again by the library
        if variant is not None:
            raise UsageError(
                f"{identity['name']} is a library operator: compare a spec's kernel with it "
                "(--spec SPEC --set NAME=VALUE), not a variant source"
            )
        return None
    path = Path(variant) if variant else Path(identity["file"] or "")
    name = f"kerntune_lab_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None or not path.is_file():
        raise UsageError(f"{path} cannot be imported: give a Python file that defines {identity['name']!r}")
    module = importlib.util.module_from_spec(found)
    try:
        found.loader.exec_module(module)
    except Exception as exc:
        raise UsageError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    fn = getattr(module, identity["name"], None)
    if fn is None:
        raise UsageError(f"{path} defines no kernel named {identity['name']!r}")
    if manifest.get("inductor"):  # a generated module binds the name to Inductor's autotuner around the kernel
        from kerntune.lab.inductor import jit_function

        fn = jit_function(fn)
    require_signature(identity, list(getattr(fn, "arg_names", [])), path)
    return fn


class Launch(Protocol):
    """A captured call rebuilt in fresh allocations: what every replay mode needs of a kernel language."""

    claims_timing: bool
    pristine: list[torch.Tensor]

    def reset(self) -> None: ...
    def run(self) -> object: ...
    def times(self, iterations: int, restore_each: bool) -> list[float]: ...
    def cache(self, restore_each: bool) -> str: ...
    def state(self) -> list[torch.Tensor]: ...
    def outputs(self) -> dict[str, torch.Tensor]: ...
    def expected(self, folder: Path) -> dict[str, torch.Tensor]: ...
    def aliased(self) -> list[str]: ...


def make_launch(manifest: Manifest, folder: Path, kernel: Any, device: str) -> Launch:
    """The captured call rebuilt for ``kernel``: a Triton function, an OpenCL source, or for an operator call
    None (the library's kernel) or a ``ServedVariant`` (a spec's kernel at a config)."""
    language = manifest["kernel"]["language"]
    if language == "opencl":
        from kerntune.lab.opencl import OpenCLLaunch

        return OpenCLLaunch(manifest, folder, kernel)
    if language in ("cuda", "hip"):
        from kerntune.lab.native import NativeLaunch

        return NativeLaunch(manifest, folder, kernel, device)
    if language == "vulkan":
        from kerntune.lab.vulkan import VulkanLaunch

        return VulkanLaunch(manifest, folder, kernel)
    if language == "aten":
        from kerntune.lab.operator_launch import OperatorLaunch

        return OperatorLaunch(manifest, folder, device, kernel)
    return TritonLaunch(manifest, folder, kernel, device)


def resources(launch: Launch, compiled: object, arch: str) -> dict[str, object] | None:
    """What the replayed binary uses: a native launch says it (the backend read its cubin when it compiled),
    a Triton launch's compiled kernel is read here."""
    own = getattr(launch, "resources", None)
    return own() if callable(own) else launch_resources(compiled, arch)


def reads_what_it_writes(launch: Launch) -> str | None:
    """Why back-to-back launches would not repeat the captured computation, or None. The test is on memory, not
    on names: a second launch from the first one's state must leave every byte of every argument's storage as
    the first left it. Arguments that share written storage (a dummy pointer passed for an unused one, as the
    demo's matmul passes C for its split-K workspace) are only the reason to compare all of it, written or not.
    A launch that skips its work once a flag it set is seen would pass this check; ``isolated`` never has that
    hazard."""
    launch.reset()
    launch.run()
    first = launch.state()
    if all(torch.equal(a, b) for a, b in zip(first, launch.pristine, strict=True)):
        return None  # writes nothing
    launch.run()
    second = launch.state()
    if any(not torch.equal(a, b) for a, b in zip(first, second, strict=True)):
        shared = launch.aliased()
        why = f" (arguments {', '.join(sorted(shared))} share storage)" if shared else ""
        return f"a second launch on the first one's memory changed it again: the launch reads what it writes{why}"
    return None


class ReplayResult(TypedDict, total=False):
    """One replay of a captured launch: its times, whether it reproduced the captured outputs, what it used."""

    iterations: int
    timing_claimed: bool
    reproduces_capture: bool | None
    resources: dict[str, object] | None
    aliased: list[str]
    replay_means_ms: list[float]
    spread: float | None
    mode: str
    cache: str
    outputs: dict[str, torch.Tensor]
    times_ms: list[float]
    median_ms: float
    mean_ms: float
    min_ms: float
    launches_per_s: float | None
    argument_bytes: int
    argument_gb_per_s: float | None


class InterleavedRatio(PairRatio, total=False):
    """``pair_ratio`` of a variant against the original, timed side by side, and the conditions it ran under."""

    order: str
    second_timer: TimerCheck


def replay(
    manifest: Manifest,
    folder: Path,
    fn: Any,
    *,
    mode: str = "isolated",
    iterations: int = 20,
    repeats: int = 5,
    device: str = "cpu",
) -> ReplayResult:
    if mode not in MODES:
        raise UsageError(f"replay mode {mode!r}: choose {', '.join(MODES)}")
    if not 1 <= iterations <= 10_000:
        raise UsageError("--iterations is 1 to 10,000")
    launch = make_launch(manifest, folder, fn, device)
    claim = launch.claims_timing
    compiled = launch.run()  # compiles; then check it reproduces the real launch
    launch.reset()
    launch.run()
    result: ReplayResult = {
        "iterations": iterations,
        "timing_claimed": claim,
        "reproduces_capture": reproduces(launch, folder),
        "resources": resources(launch, compiled, manifest["device"].get("arch", "")),
    }
    if mode == "sustained":
        refused = reads_what_it_writes(launch)
        if refused:
            raise UsageError(f"sustained replay refused: {refused}; use --mode isolated")
        result["aliased"] = launch.aliased()
        launch.reset()
        times, ran = launch.times(iterations, False), "sustained"
    elif mode == "replays":
        means = []
        for _ in range(repeats):
            fresh = make_launch(manifest, folder, fn, device)  # fresh allocations: another placement
            fresh.run()
            means.append(statistics.fmean(fresh.times(iterations, True)))
        result["replay_means_ms"] = means
        result["spread"] = max(means) / min(means) - 1 if min(means) > 0 else None
        times, ran = means, "replays"
    else:
        times, ran = launch.times(iterations, True), "isolated"
    result["mode"] = ran  # what ran, which check_mode holds against the request
    result["cache"] = launch.cache(ran != "sustained")
    launch.reset()
    launch.run()
    result["outputs"] = launch.outputs()
    result["times_ms"], result["median_ms"] = times, statistics.median(times)
    result["mean_ms"], result["min_ms"] = statistics.fmean(times), min(times)
    result["launches_per_s"] = 1e3 / statistics.fmean(times) if claim else None
    moved = sum(int(t.numel()) * t.element_size() for t in launch.pristine)
    # Each argument's storage once: what the launch must at least read or write (a lower bound on its traffic).
    result["argument_bytes"] = moved
    result["argument_gb_per_s"] = moved / result["median_ms"] / 1e6 if claim and result["median_ms"] > 0 else None
    return result


def interleaved_ratio(original: Launch, variant: Launch, iterations: int) -> InterleavedRatio:
    """The variant/original time ratio with both timed side by side: ``iterations`` pairs in A B B A order, each
    launch from pristine inputs with the L2 flushed before it (the isolated mode's conditions). Hazard guarded: two
    replays one after the other (the block medians) run under different clocks and power states — the power cap
    moves them within seconds — so the ratio of their medians carries that drift; a pair shares its moment. The
    ratio is exp of the median log ratio over A B B A blocks (``stats.abba_block_logs``), its 95% interval a
    bootstrap of that median."""
    pairs: list[tuple[float, float]] = []
    for i in range(iterations):
        order = (original, variant) if i % 2 == 0 else (variant, original)
        first, second = (launch.times(1, True)[0] for launch in order)
        pairs.append((first, second) if i % 2 == 0 else (second, first))
    try:  # a zero-length event (a clock too coarse) has no ratio: its A B B A block is left out
        found = pair_ratio(pairs)
    except ValueError:
        raise UsageError("no launch pair had a measurable time: raise --iterations or use a finer timer") from None
    return InterleavedRatio(
        ratio=found["ratio"],
        ci=found["ci"],
        pairs=found["pairs"],
        blocks=found["blocks"],
        original_ms=found["original_ms"],
        variant_ms=found["variant_ms"],
        order="A B B A, cold (inputs restored, L2 flushed before each launch)",
    )


def profiled_ratio(original: Launch, variant: Launch, iterations: int, events_ratio: float) -> TimerCheck:
    """The second timer (``measure.second_timer``): the same A B B A pairs, cold, each launch's time the summed
    durations of the device work it launched, from the profiler's kernel records, not events around it; and
    whether its ratio agrees with the event-timed one (``events_ratio``) within 1%. A profiler that cannot record
    is said in ``error``, never a failed comparison."""
    from kerntune.lab.captured import CapturedCall
    from kerntune.measure.second_timer import PROFILER, agrees, profiled_ms

    if not (isinstance(original, CapturedCall) and isinstance(variant, CapturedCall)):
        return {"error": "no profiler timer for this kind of launch"}
    order = [(original, variant) if i % 2 == 0 else (variant, original) for i in range(iterations)]
    launches = [launch for pair in order for launch in pair]

    def prepare(i: int) -> None:
        launches[i].reset()  # restore, then flush: outside the range, so neither is counted
        launches[i].flush_buffer().zero_()

    try:
        per = profiled_ms([launch.run for launch in launches], prepare, torch.cuda.synchronize)
    except Exception as exc:  # CUPTI refused, or a trace this torch writes differently
        return {"error": f"{type(exc).__name__}: {exc}"}
    pairs = [((per[2 * i], per[2 * i + 1]) if i % 2 == 0 else (per[2 * i + 1], per[2 * i])) for i in range(iterations)]
    found = pair_ratio(pairs)
    return TimerCheck(
        ratio=found["ratio"],
        ci=found["ci"],
        pairs=found["pairs"],
        blocks=found["blocks"],
        original_ms=found["original_ms"],
        variant_ms=found["variant_ms"],
        timer=PROFILER,
        agrees=agrees(events_ratio, found["ratio"]),
    )


def reproduces(launch: Launch, folder: Path) -> bool | None:
    """Whether the replayed launch wrote what the real one did (None: no recorded outputs)."""
    if not (folder / "outputs.safetensors").exists():
        return None
    expected, got = launch.expected(folder), launch.outputs()
    return all(torch.equal(expected[n].cpu(), t.cpu()) for n, t in got.items())


def check_mode(result: Mapping[str, object], requested: str) -> None:
    if result.get("mode") != requested:
        raise UsageError(f"replay ran mode {result.get('mode')!r}, not the requested {requested!r}: result refused")


_SAME_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's elements as integers of the same width: equal exactly when their bits are."""
    return t.contiguous().view(_SAME_WIDTH[t.element_size()])


def validate(
    expected: dict[str, torch.Tensor], got: dict[str, torch.Tensor], rtol: float | None = None
) -> dict[str, Any]:
    """Bitwise (default: the elements' bits, so -0.0 differs from 0.0 and NaN payloads count) or relative-error
    comparison of every argument; where it differs, and by how much."""
    for name, want in expected.items():
        have = got[name]
        if rtol is None:
            same = _bits(want) == _bits(have)
        else:
            same = torch.isclose(have.double(), want.double(), rtol=rtol, atol=0.0, equal_nan=True)
        if not bool(same.all()):
            bad = (~same).nonzero()
            where = [int(i) for i in bad[0].tolist()]
            return {
                "passed": False,
                "argument": name,
                "mismatches": int(bad.shape[0]),
                "numel": want.numel(),
                "first_index": where,
                "expected": float(want[tuple(where)]),
                "got": float(have[tuple(where)]),
                "rule": "bitwise" if rtol is None else f"rtol {rtol:g}",
            }
    return {"passed": True, "rule": "bitwise" if rtol is None else f"rtol {rtol:g}"}
