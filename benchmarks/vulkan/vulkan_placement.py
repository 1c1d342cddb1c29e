"""Where a Vulkan shader's buffers live, timed side by side: one config of a Vulkan spec with its buffers
device-local (filled through a staging copy) and host-visible (host-coherent, mapped), in one process, on two
logical devices of the same physical one. Each side is gated against the spec's reference first; then the sides
are timed interleaved dispatch by dispatch (A B B A ..., the same cache flush before each, Vulkan timestamp
queries), so both see the same clocks, and the ratio host-visible / device-local is the median of the pairs' log
ratios with its 95% interval. The host wall clock around each submit-and-wait is kept beside it as a second,
independent reading.

    python benchmarks/vulkan/vulkan_placement.py --spec examples/vulkan_reduction --shape N=268435456 \\
        --config WG=256,ITEMS=16,VEC=4 --pairs 40 --out placement.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from kerntune.backends.vulkan import VulkanBackend
from kerntune.cli.common import parse_shape
from kerntune.measure.stats import pair_ratio
from kerntune.model import Config, Shape
from kerntune.tune.gate import relative_error, threshold_for
from kerntune.tune.inputs import parse_value
from kerntune.tune.spec import load_spec


def _fields(text: str) -> dict[str, Any]:
    return {k: parse_value(v, k) for k, v in parse_shape(text).items()} if text else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--shape", default="", help="K=V,... over the spec's first shape")
    parser.add_argument("--config", default="", help="K=V,... over the spec's default config")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--device", default="")
    parser.add_argument("--out", default="")
    options = parser.parse_args()

    problem = load_spec(options.spec).problem
    shape = Shape.of({**problem.shapes[0], **_fields(options.shape)})
    config = Config.of({**problem.space.default_config().as_dict(), **_fields(options.config)})
    meta, tunables = problem.space.meta(config, shape), problem.space.tunables(config, shape)
    dtype = problem.dtypes[0]
    host_args = problem.make_inputs(shape.as_dict(), dtype, 1)
    reference = problem.reference(host_args, shape.as_dict())
    sides: dict[str, Any] = {}
    for memory in ("device-local", "host-visible"):
        backend = VulkanBackend(device=options.device, memory=memory)
        args = backend.place(host_args)
        compiled = backend.compile(problem.kernel, dict(tunables), dict(meta), args)
        compiled.launch(args)
        backend.synchronize()
        error = relative_error(backend.to_host(args[problem.outputs[0]]), reference)
        if not error <= threshold_for(dtype):
            raise SystemExit(f"{memory}: the output is wrong (relative error {error:.3g}); nothing timed")
        sides[memory] = {"backend": backend, "launch": (lambda c=compiled, a=args: c.launch(a)), "error": error}

    def sample(memory: str) -> tuple[float, float]:
        side = sides[memory]
        start = time.perf_counter()
        device_ms = side["backend"].time_launches([side["launch"]], flush=True)[0]
        return device_ms, (time.perf_counter() - start) * 1e3

    for memory in sides:  # warm-up: first dispatches, descriptor sets, clocks up
        for _ in range(3):
            sample(memory)
    device_pairs: list[tuple[float, float]] = []
    host_pairs: list[tuple[float, float]] = []
    for i in range(options.pairs):  # A B B A ...: each pair's order alternates
        order = ("device-local", "host-visible") if i % 2 == 0 else ("host-visible", "device-local")
        got = {memory: sample(memory) for memory in order}
        device_pairs.append((got["device-local"][0], got["host-visible"][0]))
        host_pairs.append((got["device-local"][1], got["host-visible"][1]))
    cost = problem.cost(shape.as_dict(), dtype) if problem.cost else None
    backend = sides["device-local"]["backend"]
    result: dict[str, Any] = {
        "spec": options.spec,
        "shape": shape.key,
        "config": config.key,
        "dtype": dtype,
        "device": str(backend.props.deviceName),
        "target": backend.target().as_dict(),
        "gate": {m: s["error"] for m, s in sides.items()},
        "host_visible_over_device_local": pair_ratio(device_pairs),
        "second_timer": {"timer": "host wall clock (submit and wait)", **pair_ratio(host_pairs)},
        "median_ms": {
            "device-local": statistics.median(a for a, _ in device_pairs),
            "host-visible": statistics.median(b for _, b in device_pairs),
        },
    }
    if cost is not None:
        result["gb_per_s"] = {m: cost.bytes / (ms * 1e-3) / 1e9 for m, ms in result["median_ms"].items()}
    text = json.dumps(result, indent=1, default=str)
    if options.out:
        Path(options.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
