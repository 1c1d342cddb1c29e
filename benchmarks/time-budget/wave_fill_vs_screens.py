"""Would ordering a GEMM search's proposals by wave fill have found the fast configs sooner? Reads the screened
candidates of `benchmarks/run time-budget` runs (their `*-candidates.csv`) and, per shape, ranks every screened
config of `kernels/triton_gemm` by its wave fill — output tiles × split-K over whole waves of SMS programs,
times the share of BLOCK_M rows that are real — against its rung-0 screen time (Spearman's rho; negative would
mean fuller waves run faster, the premise of such an ordering).

Usage: python benchmarks/time-budget/wave_fill_vs_screens.py CANDIDATES.csv [...] [--sms 132]
Prints one line per shape (configs, rho, the wave fill of the five fastest) and how many shapes have rho < 0."""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

from scipy.stats import spearmanr


def fields(text: str) -> dict[str, str]:
    """``A=1,B='x'`` as {"A": "1", "B": "x"} (the CSV's shape and config columns, read by the CLI's ``--shape``
    parser, quotes dropped)."""
    from kerntune.cli.common import parse_shape

    return {key: value.strip("'") for key, value in parse_shape(text).items()}


def wave_fill(shape: dict[str, str], config: dict[str, str], sms: int) -> float:
    """Tiles over the slots of the waves they occupy, times the real rows' share of the row tiles."""
    m, n = int(shape["M"]), int(shape["N"])
    bm, bn, split = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config.get("SPLIT_K", 1))
    tiles = math.ceil(m / bm) * math.ceil(n / bn) * split
    return tiles / (math.ceil(tiles / sms) * sms) * m / (math.ceil(m / bm) * bm)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", type=Path)
    parser.add_argument("--sms", type=int, default=132)
    opts = parser.parse_args()
    missing = [str(p) for p in opts.csv if not p.is_file()]
    if missing:
        print(f"wave_fill_vs_screens: not a file: {', '.join(missing)}", file=sys.stderr)
        return 2
    screened: dict[str, dict[str, float]] = defaultdict(dict)
    for path in opts.csv:
        for row in csv.DictReader(path.open()):
            if row["role"] == "screen" and row["status"] == "ok" and row["median_ms"]:
                screened[row["shape"]][row["config"]] = float(row["median_ms"])
    negative = counted = 0
    for shape_text, times in screened.items():
        shape = fields(shape_text)
        pairs = sorted((ms, wave_fill(shape, fields(config), opts.sms)) for config, ms in times.items())
        if len(pairs) < 10 or len({fill for _, fill in pairs}) < 2:
            continue
        rho = float(spearmanr([fill for _, fill in pairs], [ms for ms, _ in pairs]).statistic)
        counted += 1
        negative += rho < 0
        print(
            f"{shape['M']}x{shape['N']}x{shape['K']}: {len(pairs)} configs, rho {rho:+.2f}; "
            f"fill of the five fastest {[round(fill, 2) for _, fill in pairs[:5]]}"
        )
    print(f"rho < 0 (fuller waves faster) at {negative} of {counted} shapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
