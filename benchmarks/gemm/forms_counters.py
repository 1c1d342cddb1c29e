"""Why a kernel form is slower: Nsight Compute counters of the fastest config of each label in a
benchmarks/gemm/gemm_forms.py result (the reports' winners and each form's best seed) and of torch.matmul, at the shapes
asked for. Each launch runs in its own process under ncu (`kerntune profile`'s harness: compiled, warmed up three
times, then one launch inside the NVTX range ncu keeps; ncu's default cache control flushes the caches before it).

Usage: python benchmarks/gemm/forms_counters.py FORMS.json SPEC_DIR OUT.json M,N,K [M,N,K ...]
SPEC_DIR is the example whose kernels the FORMS.json timed (a form's config launches only in the spec that has
it). Prints one line per kernel (duration, compute and memory throughput as % of peak, DRAM bytes/s, achieved and
theoretical occupancy, registers); OUT.json holds them with each config and its CUPTI ratio. Exit 2 on bad arguments.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from gemm_forms import best_by_form  # this script's folder is first on sys.path

from kerntune.devices.counters import profiler_for
from kerntune.errors import UsageError
from kerntune.inspect.profile import profile_one


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__.split("\n\n")[1].splitlines()[0], file=sys.stderr)
        return 2
    forms_path, spec, out, wanted_text = Path(argv[0]), argv[1], Path(argv[2]), argv[3:]
    try:
        wanted = {tuple(int(x) for x in text.split(",")) for text in wanted_text}
        forms = json.loads(forms_path.read_text())
    except (ValueError, OSError) as exc:
        print(f"forms_counters: {exc} (shapes are M,N,K; FORMS.json is gemm_forms.py's output)", file=sys.stderr)
        return 2
    try:
        tool = profiler_for("nvidia")
    except UsageError as exc:
        print(f"forms_counters: {exc}", file=sys.stderr)
        return 2
    rows = []
    for found in forms["shapes"]:
        shape = found["shape"]
        if (shape["M"], shape["N"], shape["K"]) not in wanted:
            continue
        picks: list[tuple[str, dict[str, Any] | None, float | None]] = [("torch.matmul", None, None)]
        picks += [(label, r["config"], r["checked"]["ratio"]) for label, r in best_by_form(found).items()]
        for label, config, ratio in picks:
            payload = {
                "spec_path": spec,
                "device": "",
                "shape": shape,
                "dtype": "bfloat16",
                "config": config or {},
                "baseline": "torch.matmul" if config is None else None,
                "warmup": 3,
            }
            with tempfile.TemporaryDirectory(prefix="kerntune-forms-") as tmp:
                try:
                    kernels = profile_one(tool, payload, Path(tmp))
                except UsageError as exc:  # one config's failure is recorded; the others go on
                    kernels = [{"error": str(exc)[-300:]}]
            rows.append({"shape": shape, "label": label, "config": config, "cupti_ratio": ratio, "kernels": kernels})
            for kernel in kernels:
                metrics = kernel.get("metrics", {})
                print(
                    f"{shape['M']}x{shape['N']}x{shape['K']} {label:12s} "
                    f"{str(kernel.get('kernel', kernel.get('error', '')))[:40]:40s} "
                    + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items()),
                    flush=True,
                )
            out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
