"""``kerntune mcp``: an MCP server (the official ``mcp`` SDK, over stdio) for agents that tune, following the
lab seed's flow: ``tuning_open`` → ``tuning_status`` → ``tuning_action`` (search, select, inspect, ab, deploy,
capture, run, save) → ``tuning_close``; read-only resources for runs and the table a run would deploy.

Thin by design: every action is the kerntune command a person would type, run as a child process (so a long
search never blocks the server, and a crashing kernel costs its job, not the session); its JSON output is the
answer. Sessions live as long as the server. Arguments are validated before anything starts, and a bad one is
answered with an error that says what to pass.

Every path a tool takes (a spec, a capture, a variant, a table to write, the program a capture runs) must lie
inside the server's root folders (the folder it was started in, by default, and the store), as the web page's
specs must lie inside its ``--specs``. A list argument (``extra``, ``command``, ``shapes``) given as one string is
read as one argument list split by shell rules (one shape, for ``shapes``), never character by character, and the
answer says so.
"""

from __future__ import annotations

import json
import shlex
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerntune.errors import UsageError
from kerntune.exec.jobs import Job, start_job

ACTIONS = ("search", "select", "inspect", "ab", "deploy", "capture", "run", "save")


@dataclass
class Session:
    id: str
    folder: Path
    roots: tuple[Path, ...] = ()
    """The folders this session's paths must lie inside (empty: any, for a session built by hand in a test)."""
    spec: str | None = None
    capture: str | None = None
    selected: dict[str, Any] | None = None
    runs: list[str] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)


class Sessions:
    """The server's sessions, each with a work folder under ``home/mcp``."""

    def __init__(self, home: Path, roots: Sequence[Path] = ()) -> None:
        self.home = home
        self.roots = tuple(dict.fromkeys(p.resolve() for p in [*roots, home]))
        self.open: dict[str, Session] = {}

    def get(self, session: str) -> Session:
        if session not in self.open:
            raise UsageError(f"no open session {session!r}: call tuning_open first (open: {sorted(self.open)})")
        return self.open[session]

    def create(self, spec: str | None, capture: str | None) -> dict[str, Any]:
        if (spec is None) == (capture is None):
            raise UsageError("tuning_open takes a spec (a spec.py or its folder) or a capture folder, one of them")
        found = {
            what: str(within(self.roots, given, what))
            for given, what in ((spec, "spec"), (capture, "capture"))
            if given
        }
        for what, path in found.items():
            if not Path(path).exists():
                raise UsageError(f"{what} {path} does not exist")
        sid = uuid.uuid4().hex[:12]
        folder = self.home / "mcp" / sid
        folder.mkdir(parents=True)
        self.open[sid] = Session(sid, folder, self.roots, spec=found.get("spec"), capture=found.get("capture"))
        return {
            "session": sid,
            "spec": self.open[sid].spec,
            "capture": self.open[sid].capture,
            "actions": list(ACTIONS),
        }

    def start(self, s: Session, args: list[str]) -> dict[str, Any]:
        if s.jobs and s.jobs[-1].running:
            raise UsageError("a job is still running in this session: wait (tuning_status) or close the session")
        job = start_job(args, s.folder, f"job{len(s.jobs)}", self.home)
        s.jobs.append(job)
        return {"session": s.id, "job": len(s.jobs) - 1, "state": "running", "command": " ".join(job.argv[2:])}

    def status(self, s: Session) -> dict[str, Any]:
        if not s.jobs:
            return {"session": s.id, "state": "idle", "selected": s.selected, "runs": s.runs}
        state = s.jobs[-1].state()
        result = state.get("result")
        if isinstance(result, dict) and isinstance(result.get("run"), dict) and result["run"]["id"] not in s.runs:
            s.runs.append(result["run"]["id"])
        return {"session": s.id, "job": len(s.jobs) - 1, **state, "selected": s.selected, "runs": s.runs}

    def close(self, s: Session) -> dict[str, Any]:
        for job in s.jobs:
            job.stop()
        closed: dict[str, Any] | str | None = None
        if s.capture:
            from kerntune.lab.session import close as close_capture

            try:
                closed = close_capture(Path(s.capture))
            except UsageError as exc:  # e.g. the capture action never produced one
                closed = str(exc)
        del self.open[s.id]
        return {"session": s.id, "closed": True, "runs": s.runs, "lab": closed}


def within(roots: Sequence[Path], given: object, what: str) -> Path:
    """``given`` as a resolved path inside one of ``roots`` (any path when there are none); else a UsageError
    that names the roots."""
    if not isinstance(given, str) or not given or "\x00" in given or len(given) > 4096:
        raise UsageError(f"{what} must be a path: a non-empty string without NUL bytes, got {str(given)[:80]!r}")
    path = Path(given).expanduser().resolve()
    if roots and not any(path.is_relative_to(root) for root in roots):
        raise UsageError(
            f"{what} {given} lies outside this server's root folders ({', '.join(map(str, roots))}): give a path "
            "inside one, or start kerntune mcp in the folder that holds it"
        )
    return path


def argument_list(value: object, what: str) -> list[str]:
    """A list argument: a list of strings or numbers as given, or one string split by shell rules (as a command
    line); anything else is refused."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise UsageError(f"args.{what} {value[:80]!r} does not split into arguments ({exc}): pass a list") from None
    if isinstance(value, list) and all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in value):
        return [str(a) for a in value]
    raise UsageError(f"args.{what} must be a list of strings (or one string, split as a command line)")


def read_as(args: dict[str, Any]) -> list[str]:
    """What the answer says about list arguments given as one string (how they were read)."""
    said = []
    for name in ("extra", "command"):
        if isinstance(args.get(name), str):
            said.append(f"args.{name} was one string: split by shell rules into {argument_list(args[name], name)}")
    if isinstance(args.get("shapes"), str):
        said.append(f"args.shapes was one string: read as one shape, {args['shapes']!r}")
    return said


def _program(s: Session, command: list[str]) -> None:
    """The program a capture runs (its first ``.py`` argument, or the command itself when it is a path) must
    lie inside the roots."""
    first = next((a for a in command if a.endswith(".py")), None)
    if first is None and "/" in command[0]:
        first = command[0]
    if first is not None:
        within(s.roots, first, "capture program")


def _config_text(config: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items())


def action_argv(s: Session, action: str, args: dict[str, Any]) -> list[str] | dict[str, Any]:
    """The kerntune command an action runs, or (``select``) the answer itself."""
    if action not in ACTIONS:
        raise UsageError(f"action {action!r}: one of {', '.join(ACTIONS)}")
    spec_actions = ("search", "select", "inspect", "ab", "deploy")
    if action in spec_actions and not s.spec:
        raise UsageError(f"{action} needs a session opened on a spec")
    if action in ("run", "save") and not s.capture:
        raise UsageError(f"{action} needs a capture: open the session on one, or run the capture action first")
    extra = argument_list(args.get("extra"), "extra")
    if action == "search":
        argv = ["tune", str(s.spec)]
        for name in ("strategy", "budget", "dtype", "device", "seed", "workers", "executor", "address"):
            if name in args:
                argv += [f"--{name}", str(args[name])]
        shapes = args.get("shapes") or []
        for shape in [shapes] if isinstance(shapes, str) else argument_list(shapes, "shapes"):
            argv += ["--shape", str(shape)]
        return argv + extra
    if action == "select":
        return _select(s, args)
    config = dict(args.get("config") or s.selected or {})
    if action == "inspect":
        return ["inspect", str(s.spec), *(["--config", _config_text(config)] if config else []), *extra]
    if action == "ab":
        other = dict(args.get("against") or {})
        return [
            "ab",
            "--spec",
            str(s.spec),
            f"@{_config_text(config)}" if config else "@default",
            f"@{_config_text(other)}" if other else "@default",
            *extra,
        ]
    if action == "deploy":
        if not s.runs or "table" not in args:
            raise UsageError("deploy needs a finished search in this session and args.table (the path to write)")
        return ["deploy", s.runs[-1], "--table", str(within(s.roots, args["table"], "table"))]
    if action == "capture":
        command = argument_list(args.get("command"), "command")
        if not args.get("kernel") or not command:
            raise UsageError("capture needs args.kernel (the kernel's name) and args.command (the program, a list)")
        _program(s, command)
        target = s.folder / f"capture{len(s.jobs)}"
        s.capture = str(target)
        return [
            "lab",
            "capture",
            "--kernel",
            str(args["kernel"]),
            "--nth",
            str(args.get("nth", 1)),
            "-o",
            str(target),
            "--",
            *command,
        ]
    sets = [f"--set={k}={json.dumps(v)}" for k, v in (args.get("set") or {}).items()]
    variant = ["--variant", str(within(s.roots, args["variant"], "variant"))] if args.get("variant") else []
    if action == "run":
        if not sets and not variant:
            return [
                "lab",
                "replay",
                str(s.capture),
                "--mode",
                str(args.get("mode", "isolated")),
                "--iterations",
                str(args.get("iterations", 20)),
            ]
        return ["lab", "compare", str(s.capture), *variant, *sets, "--iterations", str(args.get("iterations", 20))]
    table = ["--table", str(within(s.roots, args["table"], "table"))] if args.get("table") else []
    return ["lab", "save", str(s.capture), *variant, *sets, *table]


def _select(s: Session, args: dict[str, Any]) -> dict[str, Any]:
    """Pick a config: ``args.config`` as given, or the winner (or ``args.rank``-th confirmed finalist) of the
    session's latest search at its first shape (or ``args.shape``)."""
    if args.get("config"):
        s.selected = dict(args["config"])
        return {"session": s.id, "selected": s.selected, "from": "given"}
    if not s.runs:
        raise UsageError("select needs args.config, or a finished search in this session (tuning_status until done)")
    from kerntune.report.summary import build_report
    from kerntune.store import Store

    store = Store(_home_of(s))
    report = build_report(store, store.get_run(s.runs[-1]))
    shapes = [r for r in report.shapes if not args.get("shape") or r.shape.key == args["shape"]]
    if not shapes:
        raise UsageError(
            f"shape {args.get('shape')!r} is not one of the tuning run's: {[r.shape.key for r in report.shapes]}"
        )
    rank = int(args.get("rank", 1))
    ranked = [c for c in ([shapes[0].winner] + [f for f in shapes[0].finalists if f.role == "search"]) if c]
    unique = list({c.config.key: c for c in ranked}.values())
    if not 1 <= rank <= len(unique):
        raise UsageError(f"rank {rank}: the tuning run has {len(unique)} ranked configs at {shapes[0].shape.key}")
    chosen = unique[rank - 1]
    best = chosen.best_measurement
    s.selected = chosen.config.as_dict()
    return {
        "session": s.id,
        "selected": s.selected,
        "from": f"run {s.runs[-1]}, rank {rank}",
        "shape": shapes[0].shape.key,
        "median_ms": best.median_ms if best else None,
    }


def _home_of(s: Session) -> Path:
    return s.folder.parent.parent
