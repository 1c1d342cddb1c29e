"""Front ends over the same functions: ``kerntune web`` (the web page) and ``kerntune mcp`` (the MCP server,
over stdio)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

import typer

from kerntune.cli.common import StoreOpt, app
from kerntune.cli.panels import FRONT, deprecated_alias
from kerntune.errors import UsageError
from kerntune.settings import Settings


@app.command("mcp", rich_help_panel=FRONT)
def mcp_server(
    store: StoreOpt = None,
    root: Annotated[
        list[Path] | None,
        typer.Option(
            "--root",
            help="A folder whose specs, programs and tables the client may name; repeat it "
            "(default: the folder the server starts in).",
        ),
    ] = None,
) -> None:
    """Serve kerntune to an MCP client over stdio: tuning_open, tuning_status, tuning_action (search, select,
    inspect, ab, deploy, capture, run, save), tuning_close; tuning runs as resources
    (kerntune://runs)."""
    try:
        from kerntune.mcp.app import build
    except ImportError as exc:
        raise UsageError(f"the MCP server needs the mcp SDK: pip install 'kerntune[mcp]' ({exc})") from None
    home = store if store is not None else Settings.from_env().home
    home.mkdir(parents=True, exist_ok=True)
    for folder in root or []:
        if not folder.is_dir():
            raise UsageError(f"--root {folder}: not a folder")
    build(home.resolve(), [f.resolve() for f in root] if root else None).run("stdio")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command(rich_help_panel=FRONT)
def web(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (loopback unless --token is given).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="The token every request must carry (default: a random one made at each start and printed in the "
            "page's URL). Give your own to bind beyond loopback.",
            envvar="KERNTUNE_WEB_TOKEN",
        ),
    ] = None,
    specs: Annotated[Path, typer.Option("--specs", help="The folder whose specs the page may start tuning.")] = Path(
        "."
    ),
    programs: Annotated[
        Path | None,
        typer.Option(
            "--programs",
            help="The folder whose Python programs the page "
            "may run for a dispatch list and captures, and whose files it "
            "may read as variants (default: --specs).",
        ),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """A local web page over the store: tuning runs, their charts, the ISA / occupancy diff of two candidates, a
    program's dispatch list whose rows start a capture, lab captures with replay, compare and save; start and stop
    a tune or a lab job and follow it live."""
    if not _loopback(host) and not token:
        raise UsageError(
            f"--host {host} is reachable from other machines: give --token TOKEN (every request "
            "must then carry it), or bind 127.0.0.1"
        )
    if token is not None and len(token) < 16:
        raise UsageError(
            "--token must be at least 16 characters (e.g. python -c 'import secrets; print(secrets.token_urlsafe())')"
        )
    if not specs.is_dir():
        raise UsageError(f"--specs {specs}: not a folder")
    if programs is not None and not programs.is_dir():
        raise UsageError(f"--programs {programs}: not a folder")
    try:
        import uvicorn  # noqa: F401  (the page's server; checked here for the error below)

        from kerntune.web.start import serve_page
    except ImportError as exc:
        raise UsageError(f"the web page needs FastAPI and uvicorn: pip install 'kerntune[web]' ({exc})") from None
    home = store if store is not None else Settings.from_env().home
    home.mkdir(parents=True, exist_ok=True)
    serve_page(home, specs, programs, host, port, token)


deprecated_alias(app, "serve", "kerntune web", web)
