"""One table, many specs: for each live call, the entry of whichever spec was fastest beside the library.

Every spec that serves an operator (a Triton family, a Gluon kernel, the library's own algorithms) is tuned and
confirmed beside the same library baseline, so their time ratios to it compare across runs. For each call (the key
without the spec's ``op`` and ``source``), the entry with the lowest ratio serves; the others are marked
``outranked`` (by which spec, at which ratios) and ``kerntune run`` leaves them unserved. An entry with no ratio
(a run not confirmed beside the library) never outranks one that has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kerntune.runtime.table import entry_key

SPEC_FIELDS = ("op", "source")


def call_identity(key: Mapping[str, Any]) -> str:
    """The live call an entry answers, whichever spec wrote it."""
    return entry_key({k: v for k, v in key.items() if k not in SPEC_FIELDS})


def rank_specs(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``entries`` with every served entry but the fastest of its call marked ``outranked``; marks from an
    earlier ranking are dropped first, since a later deploy can change the order. Entries left to the library
    take no part: the library already beats them."""
    ranked = [{k: v for k, v in e.items() if k != "outranked"} for e in entries]
    best: dict[str, dict[str, Any]] = {}
    for e in ranked:
        ratio = e.get("library_ratio")
        if e.get("library_faster") or not isinstance(ratio, (int, float)):
            continue
        call = call_identity(e["key"])
        if call not in best or ratio < best[call]["library_ratio"]:
            best[call] = e
    for e in ranked:
        winner = best.get(call_identity(e["key"]))
        if winner is None or winner is e or e.get("library_faster"):
            continue
        e["outranked"] = {
            "by": winner["key"].get("op"),
            "ratio": winner["library_ratio"],
            "own_ratio": e.get("library_ratio"),
        }
    return ranked
