"""The JSON text the store writes: never a NaN or an infinity. JSON has neither (Python's ``json`` would write
``NaN``, which SQLite's JSON functions refuse as malformed, and so do other readers of the file).

What a command was given or decided (a run's target, budget, shapes and options; a candidate's shape and config;
an A/B's sides; a calibration) is a record: a non-finite number there is a bad value that got past its check, and
is refused with a StoreError naming it, nothing written. What was read or measured beside a result (conditions and
telemetry, compile resources, a verdict's details, counter profiles, an A/B's samples) is a reading: a non-finite
one is written as null ("no value"), so it never costs the result it belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kerntune.errors import StoreError
from kerntune.model.json_types import finite_or_none, first_non_finite


def record_json(value: object, what: str, fix: str = "give a finite number") -> str:
    """``value`` as JSON text; a NaN or infinity anywhere in it is a StoreError naming ``what``, where in it the
    number lies, and ``fix`` (what to do)."""
    found = first_non_finite(value)
    if found is not None:
        where, number = found
        place = f"{what} {where}" if where else what
        raise StoreError(f"{place} is {number}, and the store keeps no NaN or infinity (JSON has none): {fix}")
    return json.dumps(value, allow_nan=False)


def reading_json(value: object, default: Callable[[object], object] | None = None) -> str:
    """``value`` as JSON text with every NaN and infinity written as null; ``default`` as ``json.dumps`` takes it."""
    return json.dumps(finite_or_none(value), allow_nan=False, default=default)
