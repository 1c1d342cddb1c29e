"""The help is grouped by the loop, and every old name still works for one release with one deprecation line. The
verb `run` serves a program; a tuning run, the noun, is never called a bare "run" in the help, the CLI's messages,
kerntune's errors or the guides."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kerntune.cli.app import app
from kerntune.cli.render import speedup_text
from kerntune.errors import UsageError

PANELS = ("Measure and tune", "Inspect", "Deploy and serve", "Laboratory", "Front ends", "Store")


def _listed(text: str) -> list[str]:
    """The verbs a help screen lists, in order (the first word of each row inside a panel)."""
    return re.findall(r"^│ ([a-z][a-z-]+)\s", text, flags=re.MULTILINE)


def test_the_help_groups_the_verbs_by_the_loop_and_hides_the_old_names() -> None:
    text = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "160"}).stdout
    at = [text.index(f"─ {panel} ─") for panel in PANELS]
    assert at == sorted(at), text
    verbs = _listed(text)
    for earlier, later in (("scope", "tune"), ("tune", "history"), ("deploy", "run"), ("run", "verify")):
        assert verbs.index(earlier) < verbs.index(later), verbs
    assert {"web", "history", "lab", "run"} <= set(verbs)
    assert not {"serve", "runs", "capture", "replay", "launches"} & set(verbs), verbs
    lab = _listed(CliRunner().invoke(app, ["lab", "--help"], env={"COLUMNS": "160"}).stdout)
    assert lab == ["capture", "launches", "replay", "compare", "save", "close"]


def _deprecated(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "is deprecated" in line]


CAPTURE = ["--kernel", "k", "-o", "{tmp}", "--", "python", "x.py"]


@pytest.mark.parametrize(
    ("old", "new", "refusal"),
    [
        (["serve", "--host", "0.0.0.0"], ["web", "--host", "0.0.0.0"], "--token"),
        (["replay", "{tmp}"], ["lab", "replay", "{tmp}"], "not a readable kerntune capture"),
        (["capture", *CAPTURE], ["lab", "capture", *CAPTURE], "exists"),
        (["launches", "--", "notpython"], ["lab", "launches", "--", "notpython"], "python"),
    ],
)
def test_an_old_name_does_the_same_thing_after_one_deprecation_line(
    old: list[str], new: list[str], refusal: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    before, after = (runner.invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in argv]) for argv in (old, new))
    for result in (before, after):
        assert isinstance(result.exception, UsageError) and refusal in str(result.exception), result.output
    verb = " ".join(new[: len(new) - len(old) + 1])
    assert _deprecated(before.stderr) == [
        f"kerntune: `kerntune {old[0]}` is deprecated and goes in the next release; use `kerntune {verb}`"
    ]
    assert _deprecated(after.stderr) == []


def test_runs_lists_what_history_lists(tmp_path: Path) -> None:
    runner = CliRunner()
    old = runner.invoke(app, ["runs", "--json", "--store", str(tmp_path)])
    new = runner.invoke(app, ["history", "--json", "--store", str(tmp_path)])
    assert old.exit_code == new.exit_code == 0 and old.stdout == new.stdout == "[]\n"
    assert _deprecated(old.stderr) == [
        "kerntune: `kerntune runs` is deprecated and goes in the next release; use `kerntune history`"
    ]
    assert _deprecated(new.stderr) == []


def test_capture_scope_is_now_tensors(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["lab", "capture", "--kernel", "k", "--scope", "all", "-o", str(tmp_path), "--", "python", "x.py"]
    )
    assert isinstance(result.exception, UsageError) and "exists" in str(result.exception)
    assert _deprecated(result.stderr) == [
        "kerntune: `kerntune lab capture --scope` is deprecated and goes in the next release; use "
        "`kerntune lab capture --tensors`"
    ]


def test_a_speedup_is_named_by_its_direction() -> None:
    assert speedup_text(1.884) == "1.88x faster"
    assert speedup_text(0.8) == "1.25x slower"
    assert speedup_text(None) == "—"


# `kerntune run` is the verb that serves a program. The noun, one tuning run, is always said "tuning run" (or
# "tuning") in what the CLI says. A bare noun is found by what stands around it: a determiner before it ("a run",
# "the run's"), an id or prefix after it ("run id"), a list it heads ("store: runs,"), a placeholder (RUN, {run})
# or a label before an id ("run {}"). The verb ("Run a program", "the call runs the kernel") has none of these.
DETERMINERS = "a|an|one|the|this|each|every|last|later|its|their|of|per|new|own|interrupted|recent|sweep|previous"
BARE_RUN = re.compile(
    rf"(?<!/)\b(?:{DETERMINERS})\s+runs?\b"  # not the second A of "an A/A run", a measurement of noise
    r"|(?<!tuning )\bruns?'s?(?=\s)"
    r"|(?<!tuning )\bruns?\s+(?:ids?|prefix(?:es)?|records?)\b"
    r"|[:;]\s+runs\b"
    r"|\{runs?\}|(?<!tuning )\bruns? (?:\[\w+\])?\{\}",
    flags=re.IGNORECASE,
)
PLACEHOLDER = re.compile(r"\bRUNS?\d*\b")  # case-sensitive: a help's placeholder for a tuning run's id


def bare_runs(text: str) -> list[str]:
    """Each bare noun "run" in ``text``, with a few words around it (box drawing and URIs left out first)."""
    flat = " ".join(re.sub(r"\w+://\S+|[│╭╮╰╯─]", " ", text).split())
    found = [*BARE_RUN.finditer(flat), *PLACEHOLDER.finditer(flat)]
    return [flat[max(0, m.start() - 30) : m.end() + 30] for m in sorted(found, key=lambda m: m.start())]


def _helps() -> dict[str, str]:
    """``kerntune --help`` and every visible command's and subcommand's, by the command line that printed it."""
    import typer

    runner = CliRunner()
    found: dict[str, str] = {}

    def walk(command: object, path: list[str]) -> None:
        found[" ".join(["kerntune", *path])] = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"}).stdout
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            if not sub.hidden:  # a deprecated alias prints the help of the command that replaced it
                walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def test_no_help_names_a_tuning_run_by_the_bare_verb() -> None:
    helps = _helps()
    assert {"kerntune", "kerntune show", "kerntune run", "kerntune lab capture", "kerntune floor check"} <= set(helps)
    bare = {line: found for line, text in helps.items() if (found := bare_runs(text))}
    assert not bare, bare


def _said(tree: ast.AST) -> list[str]:
    """The strings a module says: every literal, an f-string's fields shown as {}."""
    said: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            said.append("".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            said.append(node.value)
    return said


ERRORS = {"KerntuneError", "SpecError", "UsageError", "StoreError", "RunNotFound", "BackendUnavailable"}


def test_no_cli_message_or_error_names_a_tuning_run_by_the_bare_verb() -> None:
    """What the CLI's modules print and what any kerntune error says (the one line the CLI prints for it)."""
    src = Path(__file__).resolve().parents[3] / "src" / "kerntune"
    bare: dict[str, list[str]] = {}
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if path.parent.name == "cli":
            said = _said(tree)
        else:
            raised = [n.exc for n in ast.walk(tree) if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call)]
            said = [s for call in raised if _name(call.func) in ERRORS for s in _said(call)]
        if found := [hit for text in said for hit in bare_runs(text)]:
            bare[str(path.relative_to(src))] = found
    assert not bare, bare


def _name(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


@pytest.mark.parametrize(
    "text",
    [
        "Show one run: winner",
        "Continue an interrupted run (id).",
        "Write a run's gated winners",
        "Run id, a unique prefix of it, or 'last'.",
        "A local web page over the store: runs, their charts",
        "Most recent runs to list.",
        "kerntune deploy RUN --table T.json",
        "Usage: kerntune show [OPTIONS] {run}",
        "run {}: written",
        "Write the run's winners",
    ],
)
def test_a_bare_noun_run_is_seen(text: str) -> None:
    assert bare_runs(text), text


@pytest.mark.parametrize(
    "text",
    [
        "Show one tuning run: winner",
        "Continue an interrupted tuning run (its id).",
        "Write a tuning run's gated winners",
        "Run a Python program and capture one launch",
        "whose key the table holds runs the tuned kernel; every other call runs the library's own",
        "kerntune run leaves its key to the library",
        "Usage: kerntune show [OPTIONS] {TUNING_RUN}",
        "kerntune deploy TUNING_RUN --table T.json",
        "resources (kerntune://runs)",
        "measured by an A/A run",
    ],
)
def test_the_verb_and_a_tuning_run_are_not(text: str) -> None:
    assert not bare_runs(text), text


def test_no_guide_names_a_tuning_run_by_the_bare_verb() -> None:
    """README.md and the guides under docs/, code blocks included (a placeholder there is what a reader types)."""
    root = Path(__file__).resolve().parents[3]
    bare: dict[str, list[str]] = {}
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if found := [hit for line in path.read_text().splitlines() for hit in bare_runs(line)]:
            bare[path.name] = found
    assert not bare, bare
