"""Who may talk to the web page's server, and which names from a request may become paths.

Exposure rules:

- **Host and Origin.** A request's ``Host`` must name the address the server was bound to (any loopback name when
  that is a loopback address). A page from another origin that rebinds its DNS name to 127.0.0.1 sends its own
  name as ``Host`` and is refused (421). An ``Origin``, when sent, must be this server's own (403).
- **Token.** Every request carries the per-start token: ``Authorization: Bearer TOKEN``, the page's cookie, or
  ``?token=TOKEN`` (the URL the start command prints; it sets the cookie the page then sends). Else 401.
- **Names.** A name that becomes a path holds no NUL or control character, no part over 255 bytes and no more
  than 1000 characters (else 400, never a 500 from the file system), and no hidden part (a dot-folder or
  ``site-packages``): the API refuses what the page does not list.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse, Response

MAX_NAME = 1000
MAX_PART_BYTES = 255
WILDCARDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address (brackets of an IPv6 literal allowed)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(netloc: str) -> str:
    """The name part of ``host[:port]`` or ``[v6]:port``, lower case."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def host_allowed(name: str, bound: str | None, local: str | None) -> bool:
    """Whether a ``Host`` name may reach a server bound to ``bound`` (None: not told) over a connection whose
    local address is ``local``. A loopback bind (or connection, when the bind is a wildcard or unknown) accepts
    loopback names only; any other bind accepts its own name; a wildcard bind reached from outside leaves the
    check to the token."""
    if bound and bound not in WILDCARDS:
        return is_loopback(name) if is_loopback(bound) else name == host_name(bound)
    if local and is_loopback(local):
        return is_loopback(name)
    return True


def token_cookie(request: Request) -> str:
    """The cookie that keeps the token, one per port: two servers on one machine do not overwrite each other's."""
    server = request.scope.get("server")
    return f"kerntune_token_{server[1]}" if server and server[1] else "kerntune_token"


Next = Callable[[Request], Awaitable[Response]]
"""The rest of the app, as Starlette's HTTP middleware calls it."""


def exposure_guard(token: str, bound: str | None) -> Callable[[Request, Next], Awaitable[Response]]:
    """The HTTP middleware that applies the Host, Origin and token rules above."""

    async def guard(request: Request, call_next: Next) -> Response:
        server = request.scope.get("server")
        local = str(server[0]) if server else None
        name = host_name(request.headers.get("host", ""))
        if not host_allowed(name, bound, local):
            return JSONResponse(
                {"detail": f"Host {name!r} is not this server's address: open it by its own address (127.0.0.1)"},
                status_code=421,
            )
        origin = request.headers.get("origin")
        if origin is not None and origin.partition("://")[2].lower() != request.headers.get("host", "").lower():
            return JSONResponse(
                {"detail": f"Origin {origin[:100]!r} is not this page: requests from other sites are refused"},
                status_code=403,
            )
        cookie = token_cookie(request)
        given = (
            request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            or request.cookies.get(cookie)
            or request.query_params.get("token")
            or ""
        )
        if not hmac.compare_digest(given.encode(), token.encode()):
            return JSONResponse(
                {
                    "detail": "this server needs its token: open the URL the start command printed "
                    "(it ends in ?token=...), or send Authorization: Bearer TOKEN"
                },
                status_code=401,
            )
        response: Response = await call_next(request)
        if request.query_params.get("token"):
            response.set_cookie(cookie, token, httponly=True, samesite="strict")
        return response

    return guard


def hidden(parts: tuple[str, ...]) -> bool:
    """A path part the page never lists: a dot-folder or dot-file (.venv, .git, the store) or installed packages."""
    return any(part.startswith(".") or part == "site-packages" for part in parts)


def checked_name(name: str, what: str) -> str:
    """``name`` when it may become a path; else a 400 that says what was wrong."""
    if "\x00" in name or any(ord(ch) < 32 for ch in name):
        raise HTTPException(400, f"{what} name holds a NUL or control character: give a plain file name")
    if len(name) > MAX_NAME:
        raise HTTPException(400, f"{what} name is {len(name)} characters long: at most {MAX_NAME}")
    if any(len(part.encode()) > MAX_PART_BYTES for part in name.split("/")):
        raise HTTPException(400, f"{what} name has a part over {MAX_PART_BYTES} bytes: no file can have that name")
    return name


def inside(root: Path, name: str, what: str, folder: str) -> Path:
    """``root / name`` resolved, refused (400) unless it lies inside ``root`` (the ``folder``) and outside its
    hidden folders."""
    path = (root / checked_name(name, what)).resolve()
    if not path.is_relative_to(root):
        raise HTTPException(
            400, f"{what} {name!r} lies outside the {folder} this server serves: give a name inside the {folder}"
        )
    if hidden(path.relative_to(root).parts):
        raise HTTPException(400, f"{what} {name!r} is in a hidden folder, which this server does not serve")
    return path
