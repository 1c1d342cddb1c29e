"""A captured operator call replayed (``lab.operator`` captures it): the library's kernel, chosen again by the
library for the captured arguments, or a spec's kernel at a config taking the same call as ``kerntune run`` would
serve it (its ``Serve.shape`` reads the call's key, its ``Serve.run`` launches it).

Timing is claimed on a GPU (CUDA events, the lab's cold protocol); on the CPU the call runs and is validated, and
no timing is claimed: a spec's Triton kernel runs there in the interpreter, whose time is no kernel time.
A spec's output is a different computation from the library's (another summation order), so it is validated as
the tuner's gate does — relative L2 error within the spec's threshold for the dtype — never bitwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kerntune.errors import UsageError
from kerntune.lab.captured import CapturedCall
from kerntune.lab.manifest import DeviceRecord, Manifest
from kerntune.lab.operator import resolve
from kerntune.model import Config, Problem, Scalar, Shape, Target
from kerntune.runtime.serving import load_served_spec
from kerntune.tune.gate import relative_error, threshold_for


@dataclass
class ServedVariant:
    """A spec's kernel at ``overrides`` over its default config, taking a captured operator call."""

    spec: Path
    overrides: dict[str, Scalar]
    problem: Problem = field(init=False)
    last_key: tuple[object, ...] = ()
    """The key of the call it last took: ``(dtype, shape fields...)``."""
    target: Target | None = None
    """The device the call was captured on, as the spec's constraints read it (``TMA needs sm_90+``)."""

    def __post_init__(self) -> None:
        try:
            self.problem = load_served_spec(self.spec)
        except (OSError, ValueError, SyntaxError) as exc:
            raise UsageError(f"--spec {self.spec}: {exc}") from None

    def key(self, qualified: str, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[object, ...]:
        """The call's key as the spec serves it, ``(dtype, shape fields...)``; refused when it cannot take it."""
        serve = self.problem.serve
        assert serve is not None
        if qualified not in serve.ops:
            raise UsageError(f"{self.spec} serves {', '.join(serve.ops)}, not {qualified}")
        raw = serve.shape(qualified, args, kwargs)
        if raw is None:
            raise UsageError(
                f"{self.spec} cannot take this call (its Serve.shape declines its layout, dtype, "
                "strides or scalars): the library would run it"
            )
        self.last_key = tuple(raw)
        return self.last_key

    def shape_and_config(self, raw: tuple[Any, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
        fields = self.problem.shape_fields()
        shape = dict(zip(fields, raw[1:], strict=True))
        params = self.problem.space.params
        unknown = sorted(set(self.overrides) - set(params))
        if unknown:
            raise UsageError(f"--set {unknown[0]}: not a parameter of {self.problem.name} ({', '.join(params)})")
        config = {**self.problem.space.default_config().as_dict(), **self.overrides}
        broken = self.problem.space.check(Config.of(config), Shape.of(shape), self.target)
        if broken is not None:
            raise UsageError(f"config {config} violates the constraint {broken!r} at {shape}")
        return shape, config


def captured_target(device: DeviceRecord) -> Target:
    """The capture's device as a spec's constraints see it: the Triton backend on that arch."""
    arch = str(device.get("arch", ""))
    vendor = "nvidia" if arch.startswith("sm_") else "amd" if arch.startswith("gfx") else "cpu"
    return Target(
        "triton",
        vendor,
        arch,
        str(device.get("name", "")),
        int(device.get("compute_units", 0) or 0),
        claims_timing=device.get("type") == "cuda",
    )


class OperatorLaunch(CapturedCall):
    """The captured call of ``aten::...`` rebuilt; ``variant`` None runs the library's kernel."""

    def __init__(self, manifest: Manifest, folder: Path, device: str, variant: ServedVariant | None) -> None:
        super().__init__(manifest, folder, device, device == "cuda")
        self.qualified = manifest["kernel"]["overload"]
        self.op = resolve(self.qualified)
        self.variant = variant
        self.result: torch.Tensor | None = None
        self.served: tuple[dict[str, Any], dict[str, Any]] | None = None
        if variant is not None:
            variant.target = captured_target(manifest["device"])
            self.key = variant.key(self.qualified, tuple(self.args), self.kwargs)
            self.served = variant.shape_and_config(self.key)

    def run(self) -> object:
        if self.variant is None or self.served is None:
            out = self.op(*self.args, **self.kwargs)
        else:
            serve = self.variant.problem.serve
            assert serve is not None
            out = serve.run(self.qualified, self.served[0], self.served[1], tuple(self.args), self.kwargs)
        self.result = out if isinstance(out, torch.Tensor) else None
        return None  # no compiled kernel object to inspect: the library's or the spec's launch is opaque here

    def outputs(self) -> dict[str, torch.Tensor]:
        out = super().outputs()
        if self.result is not None and "out" not in self.kwargs:
            out["result"] = self.result.detach().cpu()
        return out


def variant_config(variant: ServedVariant) -> dict[str, Any]:
    """The config the variant ran at its last call: its overrides over the spec's default."""
    return variant.shape_and_config(variant.last_key)[1]


def validate_close(
    expected: dict[str, torch.Tensor],
    got: dict[str, torch.Tensor],
    dtype: str,
    tolerance: dict[str, float] | None,
    rtol: float | None,
) -> dict[str, Any]:
    """Every output within the relative L2 error the tuner's gate allows the dtype (``rtol`` overrides it), finite
    everywhere; where it fails, which output and by how much."""
    threshold = rtol if rtol is not None else threshold_for(dtype, tolerance)
    rule = f"relative L2 error <= {threshold:g} ({dtype}{', --rtol' if rtol is not None else ', the gate'})"
    worst = 0.0
    for name, want in expected.items():
        have = got[name].double().numpy()
        reference = want.double().numpy()
        if not np.isfinite(have).all():
            return {
                "passed": False,
                "argument": name,
                "rule": rule,
                "error": "not finite",
                "mismatches": int((~np.isfinite(have)).sum()),
                "numel": int(have.size),
            }
        error = relative_error(have, reference)
        worst = max(worst, error)
        if not error <= threshold:
            return {"passed": False, "argument": name, "rule": rule, "error": error}
    return {"passed": True, "rule": rule, "error": worst}
