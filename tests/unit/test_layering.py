"""The layering rule of docs/design.md, enforced on the source: imports flow one way."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "kerntune"

# The loop's one-way order, bottom to top: a package may import its own layer and those below it, never above.
# Within the loop (layers 2-8) each stage stands on the ones before it: the measurement protocol knows nothing of
# search, a search nothing of the run that hosts it (``search.shape_search.SearchHost``), the run nothing of how
# it is reported, compared, deployed or captured.
LAYER = {
    "cli": 9,
    "web": 9,
    "mcp": 9,
    "lab": 8,
    "deploy": 7,
    "compare": 6,
    "inspect": 6,
    "interop": 6,
    "report": 5,
    "tune": 4,
    "search": 3,
    "scope": 2,
    "measure": 2,
    "backends": 1,
    "devices": 1,
    "isa": 1,
    "exec": 1,
    "store": 1,
    "runtime": 1,
    "ops": 1,
    "model": 0,
    "settings": 0,
    "errors": 0,
}
HEAVY = ("torch", "triton", "pyopencl", "numpy", "scipy", "rich", "typer", "optuna", "ray")


def _imports(path: Path) -> list[str]:
    """Every module an import in ``path`` names, at any depth (a lazy import inside a function still couples
    the two modules), with ``from X import Y`` also giving ``X.Y`` (Y may be a submodule)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return names


def _module(path: Path) -> str:
    parts = ["kerntune", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """Module → the kerntune modules it imports (a name resolved to its longest module prefix)."""
    modules = {_module(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        found = set()
        for name in _imports(path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
        graph[module] = found
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan): every import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


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


def test_no_import_circle_between_modules() -> None:
    assert _circles(_graph()) == []


def test_no_import_circle_between_packages() -> None:
    packages: dict[str, set[str]] = {}
    for module, imported in _graph().items():
        own = module.split(".")[1] if "." in module else module
        packages.setdefault(own, set()).update(
            part for name in imported if (part := name.split(".")[1] if "." in name else name) != own
        )
    assert _circles(packages) == []


def test_the_circle_check_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages - set(LAYER) == set(), "a new package needs its place in LAYER (and docs/architecture.md)"


LAZY_TORCH = {"serving.py", "native_gate.py"}
"""Runtime modules that import torch inside the function that needs it (serving overrides torch's operators; the
native gate is built with torch's C++ extension tools); never at module level, so ``import kerntune.runtime``
stays light."""


def _module_level_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names] + [
        n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module
    ]


def test_runtime_imports_only_model_settings_errors_and_stdlib() -> None:
    for path in (SRC / "runtime").rglob("*.py"):
        for name in _imports(path):
            target = _part(name)
            if name.startswith("kerntune"):
                assert target in ("model", "settings", "errors", "runtime"), f"{path.name} imports {name}"
            if path.name in LAZY_TORCH and name.split(".")[0] == "torch":
                continue
            assert name.split(".")[0] not in HEAVY, f"{path.name} imports {name}"
        for name in _module_level_imports(path):
            assert name.split(".")[0] not in HEAVY, f"{path.name} imports {name} at module level"


def test_import_kerntune_is_light() -> None:
    code = f"import sys, kerntune, kerntune.runtime; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
