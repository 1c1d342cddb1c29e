"""The prose a newcomer reads stays short, and nothing cites a file a clone does not have.

A sentence is counted in README.md and docs/*.md after leaving out fenced code blocks, table rows, HTML comments
and inline code (one word each). A blank line, a heading and a list item each start a new sentence; within a
paragraph, a sentence ends at '.', '!' or '?' followed by white space."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROSE = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MOST_WORDS = 40
README_LINES = 150
# A path that leaves the repository: a parent folder's "shared", two levels up, or a host's work tree or home
# folder. Each literal is built so that this file does not match itself.
OUTSIDE = re.compile(r"\.\.[/\\](?:shared|\.\.[/\\])|(?<![\w.-])/(?:wor[k]|hom[e]|User[s]|roo[t])/")
# The web tests send a path two levels up to prove the server refuses it: there, and only for "../..", it is the
# point of the test.
REFUSAL_PROBES = {Path("tests/cpu/web/test_web.py"), Path("tests/cpu/web/test_web_browser.py")}
FENCE = re.compile(r"^\s*(```|~~~)")
ITEM = re.compile(r"^([-*+]|\d+\.)\s")


def sentences(text: str) -> list[str]:
    """The sentences of a markdown text, code and tables left out (see the module docstring)."""
    found: list[str] = []
    paragraph: list[str] = []
    fenced = False

    def close() -> None:
        found.extend(s for s in re.split(r"(?<=[.!?])\s+", " ".join(paragraph)) if s.strip())
        paragraph.clear()

    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            close()
            continue
        stripped = line.strip()
        if fenced:
            continue
        if not stripped or stripped.startswith(("|", "<!--")):
            close()
            continue
        if stripped.startswith("#") or ITEM.match(stripped):
            close()
        stripped = re.sub(r"`[^`]*`", "CODE", stripped)
        paragraph.append(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", stripped))  # a link counts as its text
    close()
    return found


def test_sentences_are_split_as_documented() -> None:
    text = (
        "# Title\n\nOne two. Three `a b c d` four!\n- item one\n- item two\n\n```\nnot. counted. here\n```\n| a | b |\n"
    )
    assert sentences(text) == ["# Title", "One two.", "Three CODE four!", "- item one", "- item two"]


@pytest.mark.parametrize("path", PROSE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_sentence_runs_over_forty_words(path: Path) -> None:
    long = [s for s in sentences(path.read_text()) if len(s.split()) > MOST_WORDS]
    assert not long, f"{len(long)} sentences over {MOST_WORDS} words; the first: {long[0]}"


def test_the_readme_is_short() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines < README_LINES, f"README.md has {lines} lines; move detail into a guide under docs/"


def test_no_path_outside_the_repository_is_cited() -> None:
    cited = []
    for folder in ("src", "tests", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue  # images and compressed data
            here = path.relative_to(ROOT)
            cited += [f"{here}: {m.group(0)}" for m in OUTSIDE.finditer(text) if not _probe(here, m.group(0))]
    assert not cited, cited


def _probe(path: Path, found: str) -> bool:
    """A hit the web tests send on purpose: two levels up, in one of REFUSAL_PROBES."""
    return path in REFUSAL_PROBES and found.replace("\\", "/") == "../" * 2


@pytest.mark.parametrize(
    "parts",  # each path in two parts, so that this file does not match itself
    [
        ("../", "shared/x.py"),
        ("..\\", "shared"),
        ("see ../", "../notes"),
        ("/wor", "k/main"),
        ("/hom", "e/me"),
        ("C:/User", "s/me/"),
    ],
)
def test_a_path_leaving_the_repository_is_seen(parts: tuple[str, str]) -> None:
    assert OUTSIDE.search("".join(parts)), parts


@pytest.mark.parametrize("text", ["../specs/x.py", "src/kerntune/work/x.py", "~/.cache/kerntune", "/tmp/x", "a/home/b"])
def test_a_path_inside_the_repository_or_a_cache_is_not(text: str) -> None:
    assert not OUTSIDE.search(text), text
