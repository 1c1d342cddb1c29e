"""Two configs side by side: every resource, occupancy figure and instruction category of ``inspect``'s rows
for config A against config B, kernel by kernel and target by target, with the difference B − A."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _metrics(row: dict[str, Any]) -> dict[str, Any]:
    """The comparable figures of one inspect row (resources, spills, occupancy, census), flat."""
    found: dict[str, Any] = {f"resources.{k}": v for k, v in (row.get("resources") or {}).items() if isinstance(v, int)}
    found["spills"] = row.get("spills")
    occupancy = row.get("occupancy") or {}
    for key, value in occupancy.items():  # NVIDIA: blocks and warps per SM; AMD: waves per SIMD, blocks per CU
        found[f"occupancy.{key}"] = value
    found.update({f"census.{k}": v for k, v in (row.get("census") or {}).items()})
    if row.get("error"):
        found["error"] = str(row["error"])[:200]
    return found


def diff_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """For rows of exactly two configs: one entry per (kernel, target, metric) where A and B differ, in the
    order the metrics appear; ``delta`` is B − A for numbers (None for text such as the limiter)."""
    keys = list(dict.fromkeys(r["config"] for r in rows))
    if len(keys) != 2:
        raise ValueError(f"a diff needs rows of two configs, got {len(keys)}")
    a_key, b_key = keys
    by = {(r["config"], r["kernel"], r["target"]): r for r in rows}
    out = []
    for kernel, target in dict.fromkeys((r["kernel"], r["target"]) for r in rows):
        a = _metrics(by.get((a_key, kernel, target), {}))
        b = _metrics(by.get((b_key, kernel, target), {}))
        for metric in dict.fromkeys([*a, *b]):
            va, vb = a.get(metric), b.get(metric)
            if va == vb:
                continue
            numeric = isinstance(va, (int, float)) and isinstance(vb, (int, float))
            out.append(
                {
                    "kernel": kernel,
                    "target": target,
                    "metric": metric,
                    "a": va,
                    "b": vb,
                    "delta": (vb - va) if numeric else None,  # type: ignore[operator]
                }
            )
    return out
