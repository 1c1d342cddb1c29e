"""One lab job in its own process (``session.run_job`` starts it): ``python -m kerntune.lab.job CAPTURE REQUEST``
replays the capture or compares a variant and prints the result as JSON on stdout. Its own process so that a
kernel that crashes or hangs ends the job, not the session, and so that Triton's interpreter can be switched on
before Triton is imported when the capture was made in it."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerntune.lab.manifest import Manifest
from kerntune.model import Scalar

if TYPE_CHECKING:
    from kerntune.lab.replay import ReplayResult


def with_overrides(manifest: Manifest, overrides: Mapping[str, Scalar]) -> Manifest:
    """The manifest with constexprs or launch options replaced (``--set BLOCK_K=64``): a config variant."""
    from kerntune.errors import UsageError

    changed: Manifest = json.loads(json.dumps(manifest))
    for name, value in overrides.items():
        if changed["arguments"].get(name, {}).get("kind") == "scalar" and name not in changed["positional"]:
            changed["arguments"][name]["value"] = value
        elif name in changed["options"]:
            changed["options"][name] = value
        else:
            raise UsageError(f"--set {name}: the captured launch has no constexpr or launch option of that name")
    return changed


def variant_manifest(manifest: Manifest, folder: Path, overrides: Mapping[str, Scalar]) -> Manifest:
    """The manifest of a ``--set`` variant; for a kernel Inductor generated, on the grid Inductor would launch it with
    at those block sizes (``lab.inductor.regrid``)."""
    changed = with_overrides(manifest, overrides)
    if overrides and manifest.get("inductor"):
        from kerntune.lab.inductor import regrid

        changed["grid"] = regrid(folder, changed)
    return changed


def _summary(result: ReplayResult) -> dict[str, object]:
    return {k: v for k, v in result.items() if k != "outputs"}


def main() -> None:
    from kerntune.errors import KerntuneError

    try:
        run(Path(sys.argv[1]), json.loads(sys.argv[2]))
    except KerntuneError as exc:  # a refusal, said in one line (the session relays it)
        print(f"kerntune: error: {exc}", file=sys.stderr)
        sys.exit(2)


def run(folder: Path, request: dict[str, Any]) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    on_cpu = manifest.get("device", {}).get("type") == "cpu"
    if manifest.get("interpreted") or (request.get("spec") and on_cpu):
        # Before Triton is imported by the kernel's (or spec's) module: a capture made in the interpreter, or a
        # spec's Triton kernel taking a CPU operator call, which only the interpreter can run.
        os.environ["TRITON_INTERPRET"] = "1"
    from kerntune.errors import UsageError
    from kerntune.lab.replay import (
        check_device,
        check_mode,
        interleaved_ratio,
        load_capture,
        load_kernel,
        make_launch,
        profiled_ratio,
        replay,
        validate,
    )
    from kerntune.lab.session import record, variant_sha

    manifest = load_capture(folder)
    device = check_device(manifest)
    if request.get("rtol") is not None and manifest["kernel"]["language"] in ("opencl", "vulkan"):
        raise UsageError(
            f"{manifest['kernel']['language']} buffers are captured as bytes: validation is bitwise (drop --rtol)"
        )
    if request["job"] == "profile":  # under Nsight Compute (lab.counters): one launch of each, nothing recorded
        from kerntune.lab.counters import launch_profiled
        from kerntune.lab.replay import make_launch

        variant_file = Path(request["variant"]) if request.get("variant") else None
        launch_profiled(
            [
                make_launch(manifest, folder, load_kernel(manifest), device),
                make_launch(
                    variant_manifest(manifest, folder, request.get("overrides") or {}),
                    folder,
                    load_kernel(manifest, variant_file),
                    device,
                ),
            ]
        )
        return
    conditions = {
        "mode": request.get("mode", "isolated"),
        "iterations": int(request.get("iterations", 20)),
        "repeats": int(request.get("repeats", 5)),
        "device": device,
    }
    original = replay(manifest, folder, load_kernel(manifest), **conditions)
    check_mode(original, conditions["mode"])
    row: dict[str, Any] = {"job": request["job"], **_summary(original), "device": device}
    if request["job"] == "compare":
        variant_path = Path(request["variant"]) if request.get("variant") else None
        spec = Path(request["spec"]) if request.get("spec") else None
        if spec is not None:  # a spec's kernel at a config taking the captured operator call
            from kerntune.lab.operator_launch import ServedVariant, validate_close, variant_config

            if manifest["kernel"]["language"] != "aten":
                raise UsageError(
                    "--spec compares a spec's kernel with a captured library operator call (kerntune "
                    "capture --kernel aten::mm); for a kernel launch give --variant or --set"
                )
            changed, variant_fn = manifest, ServedVariant(spec, request.get("overrides") or {})
        else:
            changed = variant_manifest(manifest, folder, request.get("overrides") or {})
            variant_fn = load_kernel(manifest, variant_path)
        variant = replay(changed, folder, variant_fn, **conditions)
        check_mode(variant, conditions["mode"])
        if spec is not None:
            validation = validate_close(
                original["outputs"],
                variant["outputs"],
                str(variant_fn.last_key[0]),
                dict(variant_fn.problem.tolerance),
                request.get("rtol"),
            )
        else:
            validation = validate(original["outputs"], variant["outputs"], request.get("rtol"))
        side_by_side = None
        if original["timing_claimed"]:  # the ratio, from the two timed launch by launch beside each other
            pair = (
                make_launch(manifest, folder, load_kernel(manifest), device),
                make_launch(changed, folder, variant_fn, device),
            )
            side_by_side = interleaved_ratio(*pair, conditions["iterations"])
            if device == "cuda":  # checked by a second, independent timer on the same conditions
                side_by_side["second_timer"] = profiled_ratio(*pair, conditions["iterations"], side_by_side["ratio"])
        row = {
            "job": "compare",
            "variant": str(variant_path or ""),
            "overrides": request.get("overrides") or {},
            "spec": str(spec.resolve()) if spec else None,
            **(
                {"served_key": list(variant_fn.last_key), "served_config": variant_config(variant_fn)}
                if spec is not None
                else {}
            ),
            "variant_sha256": variant_sha(variant_path) if variant_path else None,
            **({"variant_grid": changed["grid"]} if changed.get("grid") != manifest.get("grid") else {}),
            "mode": conditions["mode"],
            "iterations": conditions["iterations"],
            "device": device,
            "timing_claimed": original["timing_claimed"],
            "original": _summary(original),
            "median_ms": variant["median_ms"],
            "variant_result": _summary(variant),
            "validation": validation,
            "ratio": side_by_side["ratio"] if side_by_side else None,
            "interleaved": side_by_side,
            "block_ratio": variant["median_ms"] / original["median_ms"] if original["timing_claimed"] else None,
        }
    print(json.dumps(record(folder, row)))


if __name__ == "__main__":
    main()
