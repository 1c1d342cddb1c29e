"""The help is grouped by the loop, and every old name still works for one release with one deprecation line."""

from __future__ import annotations

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
