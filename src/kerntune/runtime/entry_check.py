"""Whether a table's config may run at a key: the spec's own Space and constraints, judged at the key's shape and
device. Standard library and kerntune's model only.

A table is data anyone can edit: an entry whose config the spec's space does not hold (a value not listed,
a parameter it does not have) or whose constraints reject it at the key's shape (BLOCK_K=128 at K=64, a SPLIT_K
the shape cannot take, LS=0) is never launched. The reason names the rule that broke.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kerntune.model import Config, Shape, Space, Target

DEVICE_FIELDS = ("arch", "compute_units", "device_name")


def key_target(fields: Mapping[str, Any], device: Mapping[str, Any]) -> Target | None:
    """The device a key names (its arch, compute units and name; the vendor from the table's header), as the
    tuner's Target showed it to the constraints; None when the key names no device."""
    if not all(f in fields for f in DEVICE_FIELDS):
        return None
    try:
        units = int(fields["compute_units"])
    except (TypeError, ValueError):
        return None
    return Target(
        backend=str(device.get("backend", "")),
        vendor=str(device.get("vendor", "")),
        arch=str(fields["arch"]),
        device_name=str(fields["device_name"]),
        compute_units=units,
    )


def _outside_space(space: Space, config: Mapping[str, Any]) -> str | None:
    if space.points is not None:  # a listed point, in every value the config sets (launch defaults may be left out)
        listed = [dict(p) for p in space.points]
        if any(all(name in p and p[name] == v for name, v in config.items()) for p in listed):
            return None
        return f"config is not one of the space's {len(listed)} listed configs"
    for name, value in config.items():
        if name not in space.params:
            return f"{name} is not a parameter of the space ({', '.join(space.params)})"
        allowed = list(space.params[name])
        if value not in allowed or (isinstance(value, bool) and not any(isinstance(v, bool) for v in allowed)):
            return f"{name}={value!r} is not one of the space's values {allowed}"
    return None


def config_problem(
    space: Space, config: Mapping[str, Any], fields: Mapping[str, Any], device: Mapping[str, Any] | None = None
) -> str | None:
    """None when ``config`` is a point of ``space`` that passes every constraint at the key ``fields`` (its shape
    and device), else why not. A constraint that reads the target is judged only where the key names a device;
    a constraint that raises rejects the config."""
    outside = _outside_space(space, config)
    if outside is not None:
        return outside
    target = key_target(fields, device or {})
    try:
        broken = space.check(Config.of(config), Shape.of(fields), target, target_unknown=target is None)
    except Exception as exc:  # a constraint that cannot judge this config (a missing parameter) rejects it
        return f"a constraint raised {type(exc).__name__}: {exc}"
    return None if broken is None else f"breaks the constraint {broken!r}"
