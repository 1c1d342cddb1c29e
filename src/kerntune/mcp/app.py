"""The MCP server object: the four tools over ``server.Sessions`` and the read-only run resources. ``mcp`` 2.x
names the decorated server ``MCPServer``; 1.x named it ``FastMCP`` (same decorators): either is used."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kerntune.errors import KerntuneError
from kerntune.mcp.server import Sessions, action_argv, read_as

INSTRUCTIONS = (
    "Tune GPU kernels honestly with kerntune. Open a session on a spec (spec.py or its folder) or a lab capture "
    "folder with tuning_open; drive it with tuning_action (search, then tuning_status until state is done; select "
    "the winner; inspect, ab, deploy; or capture a launch, run a replay or a --set comparison, save); tuning_close "
    "ends it (a capture's tensors are deleted; results stay). Runs are resources at kerntune://runs."
)


def _sdk() -> tuple[Any, type[Exception]]:
    """The SDK's decorated server class and the error a tool raises to answer with a message."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError

        return MCPServer, ToolError
    except ImportError:
        from mcp.server.fastmcp import FastMCP  # type: ignore[attr-defined,unused-ignore]
        from mcp.server.fastmcp.exceptions import ToolError as OldToolError  # type: ignore[import-not-found,unused-ignore]

        return FastMCP, OldToolError


def _answering(tool_error: type[Exception]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A refusal (KerntuneError: bad argument, unknown session, busy) becomes the tool's error message, not a
    crash report with a traceback."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def tool(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except KerntuneError as exc:
                raise tool_error(str(exc)) from None

        return tool

    return wrap


def build(home: Path, roots: Sequence[Path] | None = None) -> Any:
    """The server with its tools and resources, its sessions' work under ``home`` (the kerntune store). Paths the
    tools take must lie inside ``roots`` (default: the folder the server starts in) or the store."""
    sessions = Sessions(home, [Path.cwd()] if roots is None else roots)
    server_class, tool_error = _sdk()
    server, answering = server_class("kerntune", instructions=INSTRUCTIONS), _answering(tool_error)

    @server.tool()
    @answering
    def tuning_open(spec: str | None = None, capture: str | None = None) -> dict[str, Any]:
        """Open a tuning session on a kerntune spec (a spec.py file or the folder holding it) or on a lab capture
        folder (from kerntune lab capture), inside the server's root folders. Returns the session id the other
        tools take."""
        return sessions.create(spec, capture)

    @server.tool()
    @answering
    def tuning_status(session: str) -> dict[str, Any]:
        """The session's latest job: running (with its last progress line) or done / failed (with its JSON result
        or error), the selected config and the session's runs."""
        return sessions.status(sessions.get(session))

    @server.tool()
    @answering
    def tuning_action(session: str, action: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start an action in the session. search {strategy, budget, shapes, dtype, device, seed, workers,
        executor, address, extra: [...]}; select {config} or {rank, shape} from the latest search; inspect {config}; ab
        {config, against}; deploy {table}; capture {kernel, command: [...], nth}; run {mode, iterations} or a
        comparison {set: {NAME: VALUE}, variant}; save {set, table} or {variant}. Long actions run in the
        background: poll tuning_status."""
        s, given = sessions.get(session), dict(args or {})
        planned = action_argv(s, action, given)
        answer = planned if isinstance(planned, dict) else sessions.start(s, planned)
        said = read_as(given)
        return {**answer, "read_as": said} if said else answer

    @server.tool()
    @answering
    def tuning_close(session: str) -> dict[str, Any]:
        """Stop the session's running job, delete a capture's tensors (results, logs and backups stay), forget
        the session."""
        return sessions.close(sessions.get(session))

    def store() -> Any:
        from kerntune.store import Store

        return Store(home)

    @server.resource("kerntune://runs", mime_type="application/json")
    def runs() -> str:
        """The store's latest runs: id, problem, device, strategy, status, created."""
        return json.dumps(
            [
                {
                    "id": r.id,
                    "problem": r.problem,
                    "device": r.target.device_name,
                    "strategy": r.strategy,
                    "status": r.status,
                    "created": r.created,
                }
                for r in store().runs(100)
            ]
        )

    @server.resource("kerntune://runs/{run_id}", mime_type="application/json")
    def run(run_id: str) -> str:
        """A run's report: winners, baselines, outcomes, failures (as kerntune show --json)."""
        from kerntune.report.summary import build_report, report_json

        db = store()
        return json.dumps(report_json(build_report(db, db.get_run(run_id))))

    @server.resource("kerntune://runs/{run_id}/table", mime_type="application/json")
    def table(run_id: str) -> str:
        """The dispatch table kerntune deploy would write from this run (its gated, timed winners; for a spec
        served in place of a library operator, those not faster than the library marked ``library_faster`` and
        listed under ``left_to_library``)."""
        from kerntune.deploy.artifacts import table_from_run
        from kerntune.report.summary import build_report

        db = store()
        return json.dumps(table_from_run(build_report(db, db.get_run(run_id))))

    return server
