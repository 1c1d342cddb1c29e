"""Types for JSON payloads: the recursive value a JSON document holds, and the object form records take on disk
and across process boundaries. Payloads with known keys get their own TypedDict; these cover free-form JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# What ``json.loads`` returns: read values are narrowed (isinstance) before use.
JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
JSONObject: TypeAlias = dict[str, JSONValue]

# What ``json.dumps`` accepts: read-only containers, so a ``list[str]`` or ``dict[str, int]`` fits as it is.
JSONOut: TypeAlias = bool | int | float | str | Sequence["JSONOut"] | Mapping[str, "JSONOut"] | None
JSONOutObject: TypeAlias = Mapping[str, JSONOut]
