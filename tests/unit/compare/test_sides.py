"""Parsing the sides of ``kerntune ab``: specs with configs, kernel sources, git revisions, commands."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kerntune.compare.sides import parse_side
from kerntune.errors import UsageError

ROOT = Path(__file__).resolve().parents[3]
PLANTED = ROOT / "examples" / "opencl_planted_slowdown"


def test_spec_config_and_baseline_sides(tmp_path: Path) -> None:
    side = parse_side(f"{PLANTED}@ITERS=206,LS=64", None, tmp_path)
    assert side.kind == "spec" and side.config == {"ITERS": "206", "LS": "64"}
    assert side.spec_path.endswith("spec.py") and "spec.py" in side.hashes()
    only_config = parse_side("@ITERS=200", str(PLANTED), tmp_path)
    assert only_config.spec_path == side.spec_path and only_config.config == {"ITERS": "200"}
    assert parse_side(f"{PLANTED}@torch.matmul", None, tmp_path).baseline == "torch.matmul"
    with pytest.raises(UsageError, match="--spec"):
        parse_side("@ITERS=200", None, tmp_path)
    with pytest.raises(UsageError, match="NAME=VALUE"):
        parse_side(f"{PLANTED}@ITERS=", None, tmp_path)


def test_kernel_source_side_and_identity(tmp_path: Path) -> None:
    a = parse_side(str(PLANTED / "busy.cl"), str(PLANTED), tmp_path)
    b = parse_side(str(PLANTED / "busy_slower.cl"), str(PLANTED), tmp_path)
    assert a.kernel_source.endswith("busy.cl") and b.kernel_source.endswith("busy_slower.cl")
    assert a.identity() != b.identity()
    assert a.identity() == parse_side(str(PLANTED / "busy.cl"), str(PLANTED), tmp_path).identity()
    assert a.hashes()["busy.cl"] != b.hashes()["busy_slower.cl"]


def test_git_revision_side_extracts_the_spec_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "k").mkdir(parents=True)
    (repo / "k" / "spec.py").write_text("problem = None  # v1\n")
    (repo / "k" / "kernel.cl").write_text("// v1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    (repo / "k" / "spec.py").write_text("problem = None  # v2\n")
    side = parse_side(f"git:HEAD:{repo / 'k'}@X=1", None, tmp_path / "work")
    assert Path(side.spec_path).read_text() == "problem = None  # v1\n"
    assert (Path(side.spec_path).parent / "kernel.cl").exists()  # siblings come along
    assert side.config == {"X": "1"}
    with pytest.raises(UsageError, match="git"):
        parse_side(f"git:no-such-rev:{repo / 'k'}", None, tmp_path / "work")


def test_command_side_and_bad_paths(tmp_path: Path) -> None:
    side = parse_side(f"cmd:cat {PLANTED / 'busy.cl'}", None, tmp_path)
    assert side.kind == "command" and "busy.cl" in side.hashes() and "command" in side.hashes()
    with pytest.raises(UsageError, match="does not exist"):
        parse_side(str(tmp_path / "missing"), None, tmp_path)
    with pytest.raises(UsageError, match="needs a command"):
        parse_side("cmd:", None, tmp_path)


def test_env_side_wraps_any_other_side_and_is_part_of_its_identity(tmp_path: Path) -> None:
    plain = parse_side(f"{PLANTED}@ITERS=200", None, tmp_path)
    side = parse_side(f"env:KT_EXTRA=6,OTHER=a=b:{PLANTED}@ITERS=200", None, tmp_path)
    assert side.env == (("KT_EXTRA", "6"), ("OTHER", "a=b")) and side.config == plain.config
    assert side.identity() != plain.identity() and "env" in side.hashes() and side.as_dict()["env"]["KT_EXTRA"] == "6"
    nested = parse_side("env:A=1:env:B=2:cmd:echo 1", None, tmp_path)
    assert nested.kind == "command" and nested.env == (("A", "1"), ("B", "2"))
    for bad in ("env:KT_EXTRA=6", "env::cmd:echo 1", "env:1X=2:cmd:echo 1", "env:NOVALUE:cmd:echo 1"):
        with pytest.raises(UsageError, match="env:NAME=VALUE"):
            parse_side(bad, None, tmp_path)
