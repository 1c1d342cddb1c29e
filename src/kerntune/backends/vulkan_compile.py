"""GLSL → SPIR-V for the Vulkan backend, with no device: glslang's compiler once per source and defines (cached by
their hash), spirv-val on every result, and the little reflection the backend needs (entry points, specialization
ids, the declared local size) read from the SPIR-V words themselves.

Hazard guarded: a specialization constant or entry point the shader does not have is silently ignored by a
driver (a map entry for an absent id does nothing), so a misspelt tunable would tune nothing; it is refused here
by name before anything runs."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kerntune.errors import BackendUnavailable, CandidateFailed, SpecError
from kerntune.model import FailureKind

MAGIC = 0x07230203
OP_ENTRY_POINT, OP_EXECUTION_MODE, OP_DECORATE = 15, 16, 71
DECORATION_SPEC_ID = 1
EXECUTION_MODE_LOCAL_SIZE, EXECUTION_MODE_LOCAL_SIZE_ID = 17, 38
WORKGROUP_IDS = (100, 101, 102)
"""The specialization ids the local size is given through (``layout(local_size_x_id = 100, ...)``)."""


@dataclass(frozen=True)
class Reflection:
    entry_points: tuple[str, ...]
    spec_ids: frozenset[int]
    local_size: tuple[int, int, int] | None
    """The fixed local size the shader declares (None: set through specialization ids)."""


def reflect(spirv: bytes) -> Reflection:
    """Entry points, specialization ids and the fixed local size of a SPIR-V module."""
    if len(spirv) < 20 or len(spirv) % 4:
        raise SpecError("the shader is not SPIR-V: too short or not a whole number of 32-bit words")
    order = "<" if struct.unpack_from("<I", spirv)[0] == MAGIC else ">"
    words = struct.unpack(f"{order}{len(spirv) // 4}I", spirv)
    if words[0] != MAGIC:
        raise SpecError("the shader is not SPIR-V (no magic number): give GLSL source text or SPIR-V bytes")
    entries, ids, local = [], set(), None
    i = 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0:
            raise SpecError("the SPIR-V module is malformed (an instruction of length 0)")
        operands = words[i + 1 : i + count]
        if opcode == OP_ENTRY_POINT:
            entries.append(_string(operands[2:]))
        elif opcode == OP_DECORATE and len(operands) >= 3 and operands[1] == DECORATION_SPEC_ID:
            ids.add(int(operands[2]))
        elif opcode == OP_EXECUTION_MODE and len(operands) >= 5 and operands[1] == EXECUTION_MODE_LOCAL_SIZE:
            local = (int(operands[2]), int(operands[3]), int(operands[4]))
        i += count
    return Reflection(tuple(entries), frozenset(ids), local)


def _string(words: tuple[int, ...]) -> str:
    raw = b"".join(struct.pack("<I", w) for w in words)
    return raw.split(b"\0", 1)[0].decode()


def glslang() -> str:
    found = shutil.which("glslangValidator") or shutil.which("glslang")
    if not found:
        raise BackendUnavailable(
            "the Vulkan backend compiles GLSL with glslang: apt-get install glslang-tools "
            "(or give the kernel SPIR-V bytes)"
        )
    return found


def cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kerntune" / "spirv"
    root.mkdir(parents=True, exist_ok=True)
    return root


def define(name: str, value: object) -> str:
    if isinstance(value, bool):
        value = int(value)
    return f"-D{name}={value}"


def compile_glsl(source: str, defines: dict[str, object]) -> tuple[bytes, bool]:
    """SPIR-V for ``source`` with ``defines`` (and whether it came from the cache); a compile error is the
    candidate's failure, naming glslang's first errors."""
    flags = sorted(define(k, v) for k, v in defines.items())
    key = hashlib.sha256("\n".join([source, *flags]).encode()).hexdigest()[:24]
    cached = cache_dir() / f"{key}.spv"
    if cached.is_file():
        return cached.read_bytes(), True
    with tempfile.TemporaryDirectory(prefix="kerntune-glsl-") as tmp:
        src, out = Path(tmp) / "shader.comp", Path(tmp) / "shader.spv"
        src.write_text(source)
        done = subprocess.run(
            [glslang(), "-V", "--target-env", "vulkan1.1", "-S", "comp", *flags, "-o", str(out), str(src)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0 or not out.is_file():
            errors = [line.strip() for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line]
            raise CandidateFailed(
                FailureKind.COMPILE.value,
                "compile: " + " | ".join(e.replace(str(src), "shader") for e in errors[:3])
                if errors
                else (done.stdout + done.stderr)[-300:],
            )
        spirv = out.read_bytes()
    validate(spirv)
    part = cached.with_suffix(f".{os.getpid()}.part")
    part.write_bytes(spirv)
    part.replace(cached)  # atomic: two workers compiling the same config never see half a file
    return spirv, False


def validate(spirv: bytes) -> None:
    """spirv-val on the module where it is installed (Debian's spirv-tools); a module it rejects never reaches a
    driver, which may crash on one."""
    tool = shutil.which("spirv-val")
    if tool is None:
        return
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spirv)
        f.flush()
        done = subprocess.run([tool, "--target-env", "vulkan1.1", f.name], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise CandidateFailed(FailureKind.COMPILE.value, "spirv-val: " + (done.stderr or done.stdout).strip()[:300])


def check_names(reflection: Reflection, entry: str, constants: dict[str, int]) -> None:
    """Refuse an entry point or a specialization id the shader does not have, by name."""
    if entry not in reflection.entry_points:
        raise SpecError(
            f"the shader has no entry point {entry!r} (it has: {', '.join(reflection.entry_points)}): "
            "fix VulkanKernel(entry=...)"
        )
    missing = {name: cid for name, cid in constants.items() if cid not in reflection.spec_ids}
    if missing:
        have = ", ".join(str(i) for i in sorted(reflection.spec_ids)) or "none"
        said = ", ".join(f"{name} (constant_id {cid})" for name, cid in missing.items())
        raise SpecError(
            f"the shader declares no specialization constant for {said}; its constant_ids: {have}. "
            "Declare `layout(constant_id = N) const int NAME = ...;` or fix VulkanKernel(constants=...)"
        )
