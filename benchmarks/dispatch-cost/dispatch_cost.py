"""What a dispatched call costs on the host, side by side: a cached ``Dispatcher.select`` (dict key and tuple key)
against a plain dict lookup (any machine), and on a GPU a direct Triton launch of one config, the same launch
through ``Dispatcher.kernel`` and through ``triton.autotune`` (its cache already warm). Host microseconds per
call (``time.perf_counter``; the GPU work is tiny and never synchronized inside the timed loop, so the figure is
the launch path's host cost). The GPU paths are interleaved: 9 rounds, each timing every path for 2,000 calls in
a rotated order, so host drift (frequency, other tenants) falls on all paths alike; the overheads are medians of
the per-round differences against the direct launch."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

N = 20000


def per_call_us(fn: Callable[[], Any], n: int = N, repeats: int = 7) -> float:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(runs)


def host_side() -> dict[str, float]:
    from kerntune.runtime import Dispatcher, Table
    from kerntune.runtime.table import parse_table

    device = {"arch": "sm_90", "compute_units": 132, "device_name": "NVIDIA H200"}
    table: Table = parse_table(
        {
            "schema": 1,
            "entries": [
                {
                    "key": {**device, "op": "mm", "dtype": "bfloat16", "M": m, "N": 4096, "K": 4096},
                    "config": {"BLOCK": m},
                }
                for m in (16, 32, 64, 128)
            ],
        }
    )
    d = Dispatcher(
        table,
        key=lambda m, n, k: {"op": "mm", "dtype": "bfloat16", "M": m, "N": n, "K": k},
        default={"BLOCK": 64},
        device=device,
        versions={},
    )
    t = Dispatcher(
        table,
        key=lambda m, n, k: ("mm", "bfloat16", m, n, k),
        key_fields=("op", "dtype", "M", "N", "K"),
        default={"BLOCK": 64},
        device=device,
        versions={},
    )
    plain = {(16, 4096, 4096): {"BLOCK": 16}}
    assert d.select(16, 4096, 4096) == t.select(16, 4096, 4096) == {"BLOCK": 16}
    return {
        "dispatcher_select_us": per_call_us(lambda: d.select(16, 4096, 4096)),
        "dispatcher_select_tuple_key_us": per_call_us(lambda: t.select(16, 4096, 4096)),
        "dict_lookup_us": per_call_us(lambda: plain[(16, 4096, 4096)]),
    }


def gpu_side() -> dict[str, float]:
    import torch
    import triton
    import triton.language as tl

    from kerntune.runtime import Dispatcher, kernel_hash
    from kerntune.runtime.table import parse_table

    @triton.jit
    def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in (256, 512, 1024)]
    tuned = triton.autotune(configs=configs, key=["n"])(scale)
    x = torch.randn(4096, device="cuda")
    y = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    key = {"op": "scale", "n": n, "source": kernel_hash(scale)}
    table = parse_table({"schema": 1, "entries": [{"key": key, "config": {"BLOCK": 1024, "num_warps": 4}}]})
    d = Dispatcher(
        table,
        key=lambda x, y, n: ("scale", n),
        key_fields=("op", "n"),
        default={"BLOCK": 256, "num_warps": 4},
        versions={},
    )
    dispatched = d.kernel(scale)  # adds the kernel's source hash to every key, as deploy writes it
    paths = {
        "direct_launch_us": lambda: scale[grid](x, y, n, BLOCK=1024, num_warps=4),
        "dispatched_launch_us": lambda: dispatched[grid](x, y, n),
        "triton_autotune_launch_us": lambda: tuned[grid](x, y, n),
    }
    for launch in paths.values():
        launch()
    torch.cuda.synchronize()
    assert d.stats()["exact"] == 1, d.stats()  # the dispatched path really ran the table's config
    rounds: dict[str, list[float]] = {name: [] for name in paths}
    names = list(paths)
    for r in range(9):
        for name in names[r % 3 :] + names[: r % 3]:
            rounds[name].append(per_call_us(paths[name], 2000, repeats=1))
        torch.cuda.synchronize()
    direct = rounds["direct_launch_us"]
    out = {name: statistics.median(v) for name, v in rounds.items()}
    out["dispatch_over_direct_us"] = statistics.median(
        a - b for a, b in zip(rounds["dispatched_launch_us"], direct, strict=True)
    )
    out["autotune_over_direct_us"] = statistics.median(
        a - b for a, b in zip(rounds["triton_autotune_launch_us"], direct, strict=True)
    )
    out["rounds"] = rounds  # type: ignore[assignment]
    return out


if __name__ == "__main__":
    result: dict[str, Any] = {"host": host_side()}
    if "--gpu" in sys.argv:
        result["gpu"] = gpu_side()
    print(json.dumps(result, indent=1))
