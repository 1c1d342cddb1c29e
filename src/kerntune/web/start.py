"""Start the web page: a random per-start token (unless one is given), the URL that carries it printed, as
Jupyter does, then the server. The page keeps the token in a cookie after that first load."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

from kerntune.web.guard import WILDCARDS


def page_url(host: str, port: int, token: str) -> str:
    """The address to open: the bound host (127.0.0.1 for a wildcard bind), its port, the token."""
    shown = "127.0.0.1" if host in WILDCARDS else host
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}/?token={token}"


def serve_page(home: Path, specs: Path, programs: Path | None, host: str, port: int, token: str | None = None) -> None:
    """Serve the page on ``host:port`` until interrupted, printing the URL to open (with the token) first."""
    import uvicorn

    from kerntune.web.app import create_app

    token = token or secrets.token_urlsafe(32)
    app = create_app(home, specs, token, programs, host=host)
    print(f"kerntune web: open {page_url(host, port, token)}", file=sys.stdout, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
