"""Front ends over the same pipeline: ``kerntune mcp`` (the MCP server, over stdio)."""

from __future__ import annotations

from kerntune.cli.common import StoreOpt, app
from kerntune.errors import UsageError
from kerntune.settings import Settings


@app.command("mcp")
def mcp_server(store: StoreOpt = None) -> None:
    """Serve kerntune to an MCP client over stdio: tuning_open, tuning_status, tuning_action (search, select,
    inspect, ab, deploy, capture, run, save), tuning_close; runs as resources (kerntune://runs)."""
    try:
        from kerntune.mcp.app import build
    except ImportError as exc:
        raise UsageError(f"the MCP server needs the mcp SDK: pip install 'kerntune[mcp]' ({exc})") from None
    home = store if store is not None else Settings.from_env().home
    home.mkdir(parents=True, exist_ok=True)
    build(home.resolve()).run("stdio")
