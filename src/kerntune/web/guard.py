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
- **Numbers.** A body holding NaN or an infinity (Python's JSON parser reads ``NaN`` and ``Infinity``; JSON has
  neither), or a numeric field given such text, is a 400 naming the field.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import HTTPException, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from kerntune.model.json_types import first_non_finite

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


NUMBER_ERRORS = ("int_parsing", "float_parsing", "finite_number")
"""Validation errors of a numeric field whose given text may spell NaN or an infinity."""


def not_finite(field: str, shown: str) -> str:
    """The one-line refusal of a field whose value is NaN or an infinity."""
    return (
        f"{field}={shown} is not a finite number (JSON has no NaN or infinity): give a finite number, or text "
        f"where {field} takes text"
    )


async def finite_body(request: Request) -> None:
    """Refuse (400) a JSON body holding NaN or an infinity anywhere, naming where: Python's parser, which the app's
    own uses, reads ``NaN`` and ``Infinity``, and such a number must not reach a field typed ``Any`` or the default
    validation answer (which cannot write it back and would fail with a 500)."""
    raw, kind = await request.body(), request.headers.get("content-type")
    if not raw or (kind and "json" not in kind):  # FastAPI reads a body without a content type as JSON too
        return
    try:
        body = json.loads(raw)
    except ValueError:  # not JSON: FastAPI's own answer (422) says so
        return
    found = first_non_finite(body)
    if found is not None:
        where, number = found
        raise HTTPException(400, not_finite(where or "the body", json.dumps(number)))


async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
    """FastAPI's validation answer (422), except a numeric field given text that spells NaN or an infinity
    (``"nan"``, ``"inf"``): a 400 naming the field, as a NaN given as a number is."""
    for error in exc.errors():
        given = error.get("input")
        if error.get("type") in NUMBER_ERRORS and isinstance(given, str):
            try:
                number = float(given)
            except ValueError:
                continue
            if not math.isfinite(number):
                field = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "the body"
                return JSONResponse({"detail": not_finite(field, repr(given[:40]))}, status_code=400)
    return await request_validation_exception_handler(request, exc)
