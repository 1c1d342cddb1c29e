"""Do a tune report's printed ratios survive an independent timing? Per shape, the winner's time over torch.matmul's
as the report states it (its finalist row's ``ratio``, from the timer it names: CUPTI kernel durations where the
second timer ran, else events), the same confirmation's event-timed ratio (``interleaved_ratio``), and the ratio
`benchmarks/gemm/gemm_forms.py` measured for the same config in another process (CUPTI kernel durations, torch / config
/ config / torch blocks over several operand placements: the independent check); how far each is from the check.

Usage: python3 benchmarks/time-budget/printed_vs_independent.py REPORT.json WINNERS.json LABEL [--json OUT.json]
REPORT.json is a `kerntune tune --json` report; WINNERS.json a gemm_forms output that timed that report's winners
under LABEL (the time-budget suite's winners step, its ``this-run`` or a ``WINNER_REPORTS`` label). Shapes where
the two disagree on the winning config, or either lacks one, are listed and left out of the summary.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gemm"))
from gemm_forms import key_of  # the gemm suite's script: the same shape key as the timing it reads

AGREE = 0.01
"""Two ratios agree when they are within 1% of each other (the claims check's line)."""


def printed(report: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each shape's winner as the report states it: its config, printed ratio and timer, and the events' ratio."""
    found = {}
    for row in report.get("shapes", []):
        winner = row.get("winner") or {}
        final = next((f for f in row.get("finalists", []) if f.get("id") == winner.get("id")), None)
        if final is None or not (final.get("ratio") or {}).get("value"):
            continue
        found[key_of(row["shape"])] = {
            "config": winner.get("config"),
            "ratio": final["ratio"]["value"],
            "timer": final["ratio"].get("timer", ""),
            "events": (final.get("interleaved_ratio") or {}).get("ratio"),
        }
    return found


def independent(winners: dict[str, Any], label: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Each shape's gated timing of ``label``'s config in a gemm_forms output."""
    found = {}
    for shape in winners.get("shapes", []):
        for row in shape.get("rows", []):
            if row.get("label") == label and row.get("gated"):
                found[key_of(shape["shape"])] = {"config": row["config"], "ratio": row["checked"]["ratio"]}
    return found


def compare(report: dict[str, Any], winners: dict[str, Any], label: str) -> dict[str, Any]:
    """Per shape the printed, events and independent ratios with their log distances; a summary per timer."""
    stated, checked = printed(report), independent(winners, label)
    rows, left_out = [], []
    for key in stated.keys() | checked.keys():
        a, b = stated.get(key), checked.get(key)
        if (
            a is None
            or b is None
            or any(int(a["config"][k]) != int(v) for k, v in b["config"].items() if k in a["config"])
        ):
            left_out.append(
                {
                    "shape": key,
                    "why": "no winner in the report"
                    if a is None
                    else f"label {label!r} did not time it"
                    if b is None
                    else "not the same config",
                }
            )
            continue
        rows.append(
            {
                "shape": key,
                "printed": a["ratio"],
                "timer": a["timer"],
                "events": a["events"],
                "independent": b["ratio"],
                "printed_off": abs(math.log(a["ratio"] / b["ratio"])),
                "events_off": abs(math.log(a["events"] / b["ratio"])) if a["events"] else None,
            }
        )
    rows.sort(key=lambda r: r["shape"])

    def spread(name: str) -> dict[str, Any]:
        offs = [r[name] for r in rows if r[name] is not None]
        return {
            "shapes": len(offs),
            "within_1pct": sum(o <= AGREE for o in offs),
            "median_pct": 100 * statistics.median(offs) if offs else None,
            "max_pct": 100 * max(offs) if offs else None,
        }

    return {
        "label": label,
        "rows": rows,
        "left_out": left_out,
        "summary": {"printed": spread("printed_off"), "events": spread("events_off")},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path)
    parser.add_argument("winners", type=Path)
    parser.add_argument("label")
    parser.add_argument("--json", type=Path, help="also write every row and the summary here")
    opts = parser.parse_args()
    try:
        result = compare(json.loads(opts.report.read_text()), json.loads(opts.winners.read_text()), opts.label)
    except (OSError, ValueError, KeyError) as exc:
        print(f"printed_vs_independent: {exc}", file=sys.stderr)
        return 2
    if not result["rows"]:
        print(
            f"printed_vs_independent: no shape where the report's winner and {opts.label!r}'s timing meet "
            f"({len(result['left_out'])} left out: is LABEL the one the winners step gave this report?)",
            file=sys.stderr,
        )
        return 2
    for r in result["rows"]:
        m, n, k, layout, _ = r["shape"]
        events = f"{r['events']:.3f}" if r["events"] else "-"
        print(
            f"{m}x{n}x{k} {layout}: printed {r['printed']:.3f} ({r['timer'] or 'timer not named'}), events "
            f"{events}, independent {r['independent']:.3f}"
        )
    for r in result["left_out"]:
        print(f"left out {'x'.join(map(str, r['shape'][:3]))}: {r['why']}")
    for name, s in result["summary"].items():
        print(
            f"{name}: within 1% of the independent check at {s['within_1pct']} of {s['shapes']} shapes; "
            f"median {s['median_pct']:.1f}%, largest {s['max_pct']:.1f}% apart"
        )
    if opts.json:
        opts.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
