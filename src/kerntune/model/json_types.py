"""Types for free-form JSON: the recursive value a JSON document holds. Payloads with known keys get their own
TypedDict; these are for the rest (values read back are narrowed with isinstance before use)."""

from __future__ import annotations

from typing import TypeAlias

JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
JSONObject: TypeAlias = dict[str, JSONValue]
