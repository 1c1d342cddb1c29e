"""Kernel Tuner and kerntune side by side on examples/cuda_matmul (the native suite), on one NVIDIA GPU.

1. Kernel Tuner (brute force, its default protocol: 7 iterations, objective = their mean, CuPy backend) tunes the
   spec's own CUDA source over the spec's own space (TILE, WPT, VEC, UNROLL under the same constraints; the
   block size BX = TILE/VEC, BY = TILE/WPT is expressed as two tied parameters, the only form Kernel Tuner takes).
2. kerntune tunes the same spec exhaustively under its protocol.
3. `kerntune ab` times the two winners in fresh processes (ABBA, cold L2): is kerntune's at least as fast?
4. `kerntune import-kt` brings Kernel Tuner's cache in; the report shows the spread its mean of 7 hides.

Each step writes its output into OUT as it finishes; a second call given the first call's summary runs the
steps that are missing. Usage: python benchmarks/native/kt_side_by_side.py OUT [EARLIER_SUMMARY.json]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "cuda_matmul"
M = N = K = 2048
SHAPE = f"M={M},N={N},K={K}"
PARAMS = ("TILE", "WPT", "VEC", "UNROLL")


def run_kernel_tuner(out: Path) -> dict[str, Any]:
    import kernel_tuner

    sys.path.insert(0, str(SPEC))
    import spec  # the example's source and space, unchanged

    space = spec.problem.space
    tune_params: dict[str, list[int]] = {p: list(space.params[p]) for p in PARAMS}
    tune_params["BX"] = sorted({t // v for t in tune_params["TILE"] for v in tune_params["VEC"]})
    tune_params["BY"] = sorted({t // w for t in tune_params["TILE"] for w in tune_params["WPT"]})

    def allowed(p: dict[str, int]) -> bool:
        config = {k: p[k] for k in PARAMS}
        return (
            p["BX"] == p["TILE"] // p["VEC"]
            and p["BY"] == p["TILE"] // p["WPT"]
            and all(c.holds(config, {}, None) for c in space.constraints)
        )

    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.zeros((M, N), dtype=np.float32)
    reference = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    args = [a, b, c, np.int32(M), np.int32(N), np.int32(K)]
    cache = out / "kt_cache.json"
    start = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        "matmul",
        spec.SOURCE,
        (N, M),
        args,
        tune_params,
        grid_div_x=["TILE"],
        grid_div_y=["TILE"],
        block_size_names=["BX", "BY"],
        restrictions=allowed,
        answer=[None, None, reference, None, None, None],
        atol=5e-2,
        lang="cupy",
        cache=str(cache),
        quiet=True,
    )
    wall = time.perf_counter() - start
    timed = [r for r in results if isinstance(r.get("time"), float)]
    best = min(timed, key=lambda r: r["time"])
    return {
        "wall_s": wall,
        "configs": len(results),
        "timed": len(timed),
        "iterations": env.get("iterations"),
        "best": {k: best[k] for k in PARAMS},
        "best_mean_ms": best["time"],
        "best_times_ms": best.get("times"),
        "cache": str(cache),
    }


def kerntune(*argv: str, timeout: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "kerntune", *argv, "--json"], capture_output=True, text=True, timeout=timeout
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"kerntune {' '.join(argv)} exit {done.returncode}: {done.stderr[-2000:]}")
    return {"exit": done.returncode, **json.loads(done.stdout)}


def as_config(config: dict[str, Any]) -> str:
    return ",".join(f"{k}={config[k]}" for k in PARAMS)


def main(out: Path, earlier: Path | None) -> None:
    """Runs the steps not already in ``earlier`` (the summary of a call cut short; its cache lies beside it)."""
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = json.loads(earlier.read_text()) if earlier else {}
    if earlier and "kernel_tuner" in summary:
        summary["kernel_tuner"]["cache"] = str(earlier.parent / "kt_cache.json")

    def save() -> None:
        (out / "kt_side_by_side.json").write_text(json.dumps(summary, indent=1, default=str))

    if "kernel_tuner" not in summary:
        summary["kernel_tuner"] = run_kernel_tuner(out)
        save()
    if "kerntune" not in summary:
        start = time.perf_counter()
        tuned = kerntune("tune", str(SPEC), "--shape", SHAPE, "--strategy", "exhaustive", timeout=300)
        shape = tuned["shapes"][0]
        summary["kerntune"] = {
            "wall_s": time.perf_counter() - start,
            "run": tuned["run"]["id"],
            "best": {k: shape["winner"]["config"][k] for k in PARAMS},
            "best_median_ms": shape["winner"]["measurement"]["median_ms"],
            "counts": shape.get("counts"),
            "seconds": shape.get("seconds"),
        }
        save()
    kt_best, ours = summary["kernel_tuner"]["best"], summary["kerntune"]["best"]
    if "ab" not in summary:
        if kt_best == ours:
            summary["ab"] = "the same config: nothing to compare"
        else:
            summary["ab"] = kerntune(
                "ab",
                f"{SPEC}@{as_config(kt_best)}",
                f"{SPEC}@{as_config(ours)}",
                "--shape",
                SHAPE,
                "--scheme",
                "fresh",
                timeout=240,
            )
        save()
    if "import_kt" not in summary:
        summary["import_kt"] = kerntune("import-kt", summary["kernel_tuner"]["cache"], "--shape", "N,M", timeout=120)
        save()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
