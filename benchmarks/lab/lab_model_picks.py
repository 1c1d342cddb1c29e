"""What the lab suite's ``model`` step captures from a scoped program, printed for the shell:

    python3 benchmarks/lab/lab_model_picks.py hottest SCOPE.json CORPUS.jsonl   # KERNEL MATCH
    python3 benchmarks/lab/lab_model_picks.py config CAPTURE.json TABLE.json     # --set NAME=VALUE ...

``hottest``: the Inductor kernel (``triton_*``) with the most GPU time in ``kerntune scope --json``, and a
``--match`` pattern for the ``aten::mm`` call whose shape has the most GPU time in the scope's corpus (``none`` for
either when the program has none). ``config``: the config a deployed table holds for the captured mm call's shape
(M, N, K), as ``--set`` options (nothing: the spec's default)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def hottest(scope_path: str, corpus_path: str) -> str:
    from kerntune.lab.operator import match_for

    scope = json.loads(Path(scope_path).read_text())
    kernels = [k for k in scope.get("kernels", []) if str(k.get("name", "")).startswith("triton_")]
    kernel = max(kernels, key=lambda k: k.get("device_us", 0))["name"] if kernels else "none"
    lines = [json.loads(text) for text in Path(corpus_path).read_text().splitlines() if text.strip()]
    mms = [line for line in lines if str(line.get("op", "")).startswith("aten::mm")]
    if not mms:
        return f"{kernel} none"
    return f"{kernel} {match_for(max(mms, key=lambda line: line.get('device_us') or 0))}"


def table_config(table_path: str, m: int, n: int, k: int) -> dict[str, object]:
    """The config a deployed table of kernels/triton_gemm holds for M, N, K (empty: none, the spec's default)."""
    table = json.loads(Path(table_path).read_text())
    found = [e["config"] for e in table["entries"] if (e["key"]["M"], e["key"]["N"], e["key"]["K"]) == (m, n, k)]
    return dict(found[0]) if found else {}


def checked_configs(report_path: str, m: int, n: int, k: int) -> list[dict[str, object]]:
    """The configs of kernels/triton_gemm that a ``benchmarks/gemm/decode_gemm.py`` report timed again by CUPTI at
    M, N, K, fastest first (its labels, ``N32K64s1w4p5``, read back into the configs that sweep launched)."""
    import re

    report = json.loads(Path(report_path).read_text())
    out = []
    for shape in report["shapes"]:
        if (shape["M"], shape["N"], shape["K"]) != (m, n, k):
            continue
        for label, _ in sorted(shape.get("cupti_us", {}).items(), key=lambda item: item[1]):
            parsed = re.fullmatch(r"N(\d+)K(\d+)s(\d+)w(\d+)p(\d+)", label)
            if parsed:
                bn, bk, split, warps, stages = (int(v) for v in parsed.groups())
                out.append(
                    {
                        "BLOCK_M": 16,
                        "BLOCK_N": bn,
                        "BLOCK_K": bk,
                        "GROUP_M": 8,
                        "SPLIT_K": split,
                        "FUSED": int(split > 1),
                        "TMA": 0,
                        "PERSISTENT": 0,
                        "num_warps": warps,
                        "num_stages": stages,
                    }
                )
    return out


def config(capture_path: str, table_path: str) -> str:
    capture = json.loads(Path(capture_path).read_text())
    a, b = capture["arguments"]["self"], capture["arguments"]["mat2"]
    found = table_config(table_path, a["shape"][0], b["shape"][1], a["shape"][1])
    return " ".join(f"--set {name}={value}" for name, value in found.items())


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("hottest", "config"):
        sys.exit(__doc__)
    print(hottest(sys.argv[2], sys.argv[3]) if sys.argv[1] == "hottest" else config(sys.argv[2], sys.argv[3]))
