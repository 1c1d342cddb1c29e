"""The two sides of ``kerntune ab``, parsed from the command line.

A side is one of:

- ``SPEC[@K=V,...]``: a spec file or folder, at a config (merged over the space's default config), or
  ``SPEC@NAME`` for one of its baselines (``@torch.matmul``); with ``--spec``, ``@K=V,...`` alone;
- ``FILE`` with ``--spec SPEC``: a kernel source file replacing the spec's kernel (OpenCL source, or a
  Python module defining the Triton kernel under the same name);
- ``git:REV:PATH[@...]``: PATH as it was at git revision REV (a spec's whole folder is extracted, so its
  sibling files come along), then read as one of the above;
- ``cmd:COMMAND``: a shell command that prints a metric (the last number of its output, or ``--metric``);
- ``env:NAME=VALUE[,NAME=VALUE]:SIDE``: SIDE run with those environment variables set in its processes (a
  change that takes a restart: such a side always runs in fresh processes).
"""

from __future__ import annotations

import hashlib
import io
import re
import shlex
import subprocess
import tarfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError


@dataclass(frozen=True)
class Side:
    text: str
    kind: str
    """``spec`` or ``command``."""
    spec_path: str = ""
    kernel_source: str = ""
    config: dict[str, str] = field(default_factory=dict)
    baseline: str = ""
    command: str = ""
    files: tuple[str, ...] = ()
    """Every source file involved: their md5s go into the A/B record."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables set in the side's processes (``env:`` sides)."""

    def file_digest(self) -> str:
        """The md5s of the side's files, in order: its code by content, wherever it was read from."""
        return ",".join(md5_file(f) for f in self.files)

    def identity(self) -> str:
        """What the side runs as written (content, command, selector); runners refine it with the resolved
        config (``SpecRunner.work``)."""
        return "|".join(
            (
                self.kind,
                self.command,
                self.baseline,
                repr(sorted(self.config.items())),
                self.file_digest(),
                repr(self.env),
            )
        )

    def hashes(self) -> dict[str, str]:
        out = {Path(f).name: md5_file(f) for f in self.files}
        if self.command:
            out["command"] = hashlib.md5(self.command.encode()).hexdigest()
        if self.env:
            out["env"] = hashlib.md5(repr(self.env).encode()).hexdigest()
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "kind": self.kind,
            "spec": self.spec_path,
            "kernel_source": self.kernel_source,
            "config": self.config,
            "baseline": self.baseline,
            "command": self.command,
            "env": dict(self.env),
        }


def md5_file(path: str) -> str:
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


def _split_at(text: str) -> tuple[str, str]:
    """``path@K=V`` → (path, ``K=V``); an ``@`` inside a path part is left alone."""
    head, sep, tail = text.rpartition("@")
    if not sep or "/" in tail:
        return text, ""
    return head, tail


def parse_selector(selector: str, text: str) -> tuple[dict[str, str], str]:
    """What follows a side's ``@``: a config (``K=V,...``) or a baseline's name; ``text`` names it in errors."""
    if not selector:
        return {}, ""
    if "=" not in selector:
        return {}, selector  # a baseline name
    config: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in selector.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UsageError(f"side {text!r}: expected @NAME=VALUE[,NAME=VALUE], got {part!r}")
        config[name.strip()] = value.strip()
    return config, ""


def _git_extract(rev: str, path: str, workdir: Path) -> Path:
    """PATH at REV under ``workdir``; a spec's whole folder is extracted so its siblings come along."""
    target = Path(path)
    folder = target if (target.is_dir() or target.suffix == "") else target.parent
    want = folder if (target.name == "spec.py" or target.is_dir()) else target
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            check=True,
            cwd=folder if folder.is_dir() else None,
        ).stdout.strip()
        rel = Path(want).resolve().relative_to(top)
        blob = subprocess.run(
            ["git", "archive", "--format=tar", rev, "--", str(rel)], capture_output=True, check=True, cwd=top
        ).stdout
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        message = detail.decode(errors="replace").strip() if isinstance(detail, bytes) else str(detail)
        raise UsageError(
            f"git:{rev}:{path}: cannot read it from git ({message or exc}); check the revision "
            "and that the path is tracked"
        ) from None
    dest = workdir / re.sub(r"[^A-Za-z0-9_.-]", "_", rev)
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")
    found = dest / rel
    if not found.exists():
        raise UsageError(f"git:{rev}:{path}: not found at that revision")
    return found / "spec.py" if found.is_dir() else found


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_side(text: str, spec: str | None, workdir: Path) -> Side:
    """One side from its command-line text (see the module docstring); ``workdir`` holds git extracts."""
    if text.startswith("env:"):
        assignments, sep, rest = text[4:].partition(":")
        env: list[tuple[str, str]] = []
        for part in filter(None, assignments.split(",")):
            name, eq, value = part.partition("=")
            if not eq or not ENV_NAME.fullmatch(name):
                raise UsageError(f"side {text!r}: expected env:NAME=VALUE[,NAME=VALUE]:SIDE, got {part!r}")
            env.append((name, value))
        if not sep or not rest or not env:
            raise UsageError(
                f"side {text!r}: expected env:NAME=VALUE[,NAME=VALUE]:SIDE (e.g. env:TRITON_F32_DEFAULT=ieee:@BLOCK=64)"
            )
        inner = parse_side(rest, spec, workdir)
        return replace(inner, text=text, env=tuple(sorted({**dict(inner.env), **dict(env)}.items())))
    if text.startswith("cmd:"):
        command = text[4:].strip()
        if not command:
            raise UsageError("cmd: side needs a command, e.g. 'cmd:./bench --iters 100'")
        files = tuple(t for t in shlex.split(command) if Path(t).is_file())
        return Side(text, "command", command=command, files=files)
    body, selector = _split_at(text)
    if body.startswith("git:"):
        rev, sep, path = body[4:].partition(":")
        if not sep or not rev or not path:
            raise UsageError(f"side {text!r}: expected git:REVISION:PATH")
        body = str(_git_extract(rev, path, workdir))
    config, baseline = parse_selector(selector, text)
    if not body:
        if spec is None:
            raise UsageError(f"side {text!r} names only a config: give --spec SPEC, or write SPEC@{selector}")
        body = spec
    target = Path(body)
    if not target.exists():
        raise UsageError(
            f"side {text!r}: {body!r} does not exist (give a spec, a kernel source with --spec, "
            "git:REV:PATH or cmd:COMMAND)"
        )
    if spec is not None and target.is_file() and target.name != "spec.py" and Path(spec).resolve() != target.resolve():
        spec_file = _spec_file(spec)
        source = str(target.resolve())
        return Side(
            text,
            "spec",
            spec_path=spec_file,
            kernel_source=source,
            config=config,
            baseline=baseline,
            files=(spec_file, source),
        )
    spec_file = _spec_file(body)
    return Side(text, "spec", spec_path=spec_file, config=config, baseline=baseline, files=(spec_file,))


def _spec_file(path: str) -> str:
    p = Path(path)
    p = p / "spec.py" if p.is_dir() else p
    if not p.is_file():
        raise UsageError(f"{path!r} is neither a spec file nor a folder holding spec.py")
    return str(p.resolve())
