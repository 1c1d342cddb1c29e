"""The layering rule of DESIGN.md, enforced on the source: imports flow one way."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "kerntune"

# A layer may import its own layer and those below it.
LAYER = {
    "cli": 3, "web": 3, "mcp": 3,
    "pipeline": 2, "lab": 2,
    "backends": 1, "devices": 1, "isa": 1, "exec": 1, "store": 1,
    "model": 0, "settings": 0, "errors": 0,
}
HEAVY = ("torch", "triton", "pyopencl", "numpy", "scipy", "rich", "typer", "optuna", "ray")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "kerntune" and len(parts) > 1 else None


def test_imports_flow_one_way() -> None:
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        owner = rel.parts[0].removesuffix(".py")
        if owner not in LAYER:
            continue
        for name in _imports(path):
            target = _part(name)
            if target in LAYER and LAYER[target] > LAYER[owner]:
                bad.append(f"{rel} imports {name}")
    assert not bad, bad


def test_runtime_imports_only_model_settings_errors_and_stdlib() -> None:
    for path in (SRC / "runtime").rglob("*.py"):
        for name in _imports(path):
            target = _part(name)
            if name.startswith("kerntune"):
                assert target in ("model", "settings", "errors", "runtime"), f"{path.name} imports {name}"
            assert name.split(".")[0] not in HEAVY, f"{path.name} imports {name}"


def test_import_kerntune_is_light() -> None:
    code = ("import sys, kerntune, kerntune.runtime; "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
