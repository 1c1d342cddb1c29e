"""Types for free-form JSON: the recursive value a JSON document holds. Payloads with known keys get their own
TypedDict; these are for the rest (values read back are narrowed with isinstance before use). JSON has no NaN or
infinity: ``first_non_finite`` finds one before it is written, ``finite_or_none`` writes each as null."""

from __future__ import annotations

import math
from typing import TypeAlias

JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
JSONObject: TypeAlias = dict[str, JSONValue]


def first_non_finite(value: object, where: str = "") -> tuple[str, float] | None:
    """The first NaN or infinity inside ``value`` (dicts, lists and tuples searched) and where it lies, as
    ``where`` extended by its keys and indexes (``options.costs[0]``); None when every number in it is finite."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, value)
    if isinstance(value, dict):
        items: list[tuple[str, object]] = [(f"{where}.{k}" if where else str(k), v) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
    else:
        return None
    for place, item in items:
        found = first_non_finite(item, place)
        if found is not None:
            return found
    return None


def finite_or_none(data: object) -> object:
    """``data`` with every NaN and infinity as None (dicts, lists and tuples rebuilt, tuples as lists)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite_or_none(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite_or_none(v) for v in data]
    return data
