"""What a replayed launch's binary is: registers, spills, shared memory / LDS, theoretical occupancy and the
instruction mix (matrix instructions first), read from the compiled kernel the replay ran — the same code
``kerntune inspect`` reads (``backends.triton_cross.inspect_compiled``: cuobjdump and nvdisasm on the cubin, or
the AMDGCN text for gfx targets).

The static part never fails a replay: a field a Triton release does not expose, or a tool that is missing, is
left out and said in ``inspect_error``. On AMD this path is written to the documented interface and untested
here (no ROCm GPU was available).
"""

from __future__ import annotations

from dataclasses import asdict

from kerntune.isa import amdgcn, sass

MATRIX = tuple(name for name in (*sass.CATEGORIES, *amdgcn.CATEGORIES) if name.startswith(("tensor core", "matrix")))
"""The census categories that count matrix instructions (HGMMA/HMMA/... on NVIDIA, v_mfma/v_wmma on AMD)."""


def launch_resources(compiled: object, arch: str) -> dict[str, object] | None:
    """Resources of ``compiled`` (a Triton CompiledKernel; None in the interpreter) on ``arch`` (sm_90, gfx942):
    Triton's own figures, then the binary's census and occupancy where the arch is known."""
    if compiled is None or not hasattr(compiled, "metadata"):
        return None
    from kerntune.backends.triton import kernel_resources

    found, _ = kernel_resources(compiled)
    out: dict[str, object] = {
        k: found[k] for k in ("registers", "spills", "shared_bytes", "num_warps", "num_stages") if k in found
    }
    try:
        from kerntune.backends.triton_cross import inspect_compiled
        from kerntune.isa.targets import TARGETS

        if arch not in TARGETS:
            raise ValueError(f"no ISA model for {arch!r}")
        seen = inspect_compiled(compiled, arch)
    except Exception as exc:  # a missing tool or an unexposed field costs the census, never the replay
        out["inspect_error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["instructions"] = dict(seen.census)
    out["matrix_instructions"] = sum(seen.census.get(name, 0) for name in MATRIX)
    out["spill_instructions"] = seen.spills
    if seen.occupancy is not None:
        out["occupancy"] = {"theoretical_pct": round(100 * seen.occupancy.fraction, 1), **asdict(seen.occupancy)}
    return out
