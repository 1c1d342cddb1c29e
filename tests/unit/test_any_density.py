"""Records cross layers typed: ``Any`` in src/ stays under 20 per 1,000 lines, so it cannot creep back."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "kerntune"

CEILING_PER_1000 = 20
"""Fewer than 20 per 1,000 lines, the ceiling itself refused: dataclasses, TypedDicts, Protocols and ``object``
carry the rest."""

ANY = re.compile(r"\bAny\b")


def any_density(root: Path) -> tuple[int, int]:
    """Occurrences of the word ``Any`` and lines of Python under ``root``."""
    count = lines = 0
    for path in root.rglob("*.py"):
        text = path.read_text()
        count += len(ANY.findall(text))
        lines += text.count("\n")
    return count, lines


def under_ceiling(count: int, lines: int) -> bool:
    """Strictly fewer than ``CEILING_PER_1000`` per 1,000 lines, compared in integers (no rounding at the edge)."""
    return 1000 * count < CEILING_PER_1000 * lines


def test_any_per_thousand_lines_stays_under_its_ceiling() -> None:
    count, lines = any_density(SRC)
    per_1000 = 1000 * count / lines
    assert under_ceiling(count, lines), (
        f"src/ has {count} Any in {lines} lines ({per_1000:.1f} per 1,000; fewer than {CEILING_PER_1000} allowed): "
        "type the new code with dataclasses, TypedDicts, Protocols or object"
    )


def test_the_count_sees_a_file_full_of_any(tmp_path: Path) -> None:
    (tmp_path / "loose.py").write_text("from typing import Any\n\nx: Any = 1\n")
    (tmp_path / "typed.py").write_text("AnyThing = 1\nmany = 2\n")
    assert any_density(tmp_path) == (2, 5)


def test_the_ceiling_itself_is_refused() -> None:
    assert under_ceiling(19, 1000) and under_ceiling(1999, 100_000)
    assert not under_ceiling(20, 1000) and not under_ceiling(2000, 100_000)
