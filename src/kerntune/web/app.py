"""The web page's app (FastAPI) over the store: runs, a run's charts, the ISA / occupancy diff of two
candidates, the lab's captures; it starts and stops tunes, replays and follows them live. ``web.start.serve_page``
runs it and prints the URL to open.

Security (``web.guard``): every request carries the per-start token and names this server's own address as its
Host (a DNS-rebinding page is refused), and an Origin, when sent, must be this page. Names from requests never
become paths unchecked: run ids are looked up in the store, specs must lie inside the spec folder the server was
given, programs inside the programs folder, neither in a hidden folder; captures are plain names of folders in
``<store>/captures``. Refusals are 4xx with a message (``{"detail": ...}``), never a traceback. A request body
holding NaN or an infinity (Python's JSON parser takes ``NaN`` and ``Infinity``; JSON has neither), or a numeric
field given as such text, is a 400 naming the field, as is a tune's shape value that is not finite.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import count
from pathlib import Path
from typing import Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, Field

from kerntune.errors import KerntuneError, RunNotFound
from kerntune.exec.jobs import Job, start_job
from kerntune.model import Budget
from kerntune.store import Store
from kerntune.web import pages
from kerntune.web.guard import checked_name, exposure_guard, finite_body, hidden, inside, invalid_request

CAPTURE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


class TuneRequest(BaseModel):
    spec: str = Field(min_length=1, max_length=1000)
    strategy: str = "auto"
    budget: str | None = Field(default=None, max_length=100)
    shapes: list[str] = Field(default_factory=list, max_length=64)
    workers: int | None = Field(default=None, ge=1, le=1024)
    executor: Literal["local", "ray"] = "local"


class ReplayRequest(BaseModel):
    mode: str = "isolated"
    iterations: int = Field(default=20, ge=1, le=10_000)


class ProgramRequest(BaseModel):
    program: str = Field(min_length=1, max_length=1000)
    """A Python file inside the programs folder this server was given."""
    args: list[str] = Field(default_factory=list, max_length=64)
    profile: bool = False
    """List by device-time share (``kerntune scope``: a GPU) instead of by launches (``kerntune launches``)."""
    region: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.:-]{1,100}$")
    """With ``profile``: count only the ranges the program marks with this ``record_function`` name (its steady
    state: ``scope --region``); without it the whole run, start-up and compilation included."""


class CaptureRequest(ProgramRequest):
    kernel: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_:.]{0,200}$")
    nth: int = Field(default=1, ge=1, le=1_000_000)
    gemm: dict[str, Any] | None = None
    """For an operator (``aten::mm``): the scope's GEMM line (op, shape, dtype, layout, bias) whose calls to capture."""


class VariantRequest(BaseModel):
    variant: str | None = Field(default=None, max_length=1000)
    """A variant source inside the programs folder."""
    sets: list[str] = Field(default_factory=list, max_length=32)
    """NAME=VALUE config changes."""
    iterations: int = Field(default=20, ge=1, le=10_000)
    spec: str | None = Field(default=None, max_length=1000)
    """For a captured operator call: a spec inside the spec folder whose kernel takes it (``lab compare --spec``)."""
    table: str | None = Field(default=None, max_length=1000)
    """With ``spec``, on save: the served table to write, a .json path inside the programs folder."""


def create_app(
    home: Path,
    specs_root: Path,
    token: str | None = None,
    programs_root: Path | None = None,
    host: str | None = None,
) -> FastAPI:
    """The app over the store at ``home``; tunes may start specs inside ``specs_root``, dispatch lists and captures
    run programs (and read variants) inside ``programs_root`` (default: ``specs_root``). ``token``: what every
    request must carry (None: a random one, kept as ``app.state.token`` and printed when the server starts).
    ``host``: the address the server is bound to, which every request's Host must name (see ``web.guard``)."""
    announce = token is None
    token = token or secrets.token_urlsafe(32)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if announce:  # a caller that did not choose the token learns it here (``web.start`` prints the URL)
            print(f"kerntune web: open the page with ?token={token} after its address", flush=True)
        yield

    app = FastAPI(
        title="kerntune",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
        dependencies=[Depends(finite_body)],
    )
    home, specs_root = home.resolve(), specs_root.resolve()
    programs = (programs_root or specs_root).resolve()
    jobs: dict[int, Job] = {}
    ids = count(1)

    app.state.token = token
    app.middleware("http")(exposure_guard(token, host))
    app.exception_handler(RequestValidationError)(invalid_request)

    @app.exception_handler(KerntuneError)
    async def refused(request: Request, exc: KerntuneError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404 if isinstance(exc, RunNotFound) else 400)

    def store() -> Store:
        return Store(home)

    def spec_names() -> list[str]:
        # Hidden folders (.venv, .git, the store) and installed packages are not specs to offer.
        found = sorted(p.parent for p in specs_root.rglob("spec.py") if not hidden(p.relative_to(specs_root).parts))
        return [str(p.relative_to(specs_root)) for p in found][:500]

    def spec_path(name: str) -> Path:
        path = inside(specs_root, name, "spec", "spec folder")
        if not (path / "spec.py").is_file() and not (path.suffix == ".py" and path.is_file()):
            raise HTTPException(400, f"spec {name!r}: no spec.py there (choose one of the listed specs)")
        return path

    def capture_path(name: str) -> Path:
        root = home / "captures"
        if not CAPTURE_NAME.match(checked_name(name, "capture")) or not (root / name / "manifest.json").is_file():
            raise HTTPException(404, f"no capture named {name!r} in {root}")
        return root / name

    def inside_programs(name: str, what: str, suffixes: tuple[str, ...]) -> Path:
        path = inside(programs, name, what, "programs folder")
        if not path.is_file() or path.suffix not in suffixes:
            raise HTTPException(
                400,
                f"{what} {name!r}: not a {'/'.join(suffixes)} file inside the programs folder "
                f"this server serves ({programs})",
            )
        return path

    def program_command(request: ProgramRequest) -> list[str]:
        return ["--", "python", str(inside_programs(request.program, "program", (".py",))), *request.args]

    def in_programs(name: str, suffix: str) -> Path:
        """A file path inside the programs folder that may not exist yet (a table to write)."""
        path = inside(programs, name, "table", "programs folder")
        if path.suffix != suffix or not path.parent.is_dir():
            raise HTTPException(
                400, f"{name!r}: not a {suffix} path inside the programs folder this server serves ({programs})"
            )
        return path

    def variant_args(request: VariantRequest) -> list[str]:
        args = ["--spec", str(spec_path(request.spec))] if request.spec else []
        if request.variant:
            args += ["--variant", str(inside_programs(request.variant, "variant", (".py", ".cl", ".cu", ".hip")))]
        for text in request.sets:
            if "=" not in text or not text.partition("=")[0].isidentifier():
                raise HTTPException(400, f"set {text!r}: write NAME=VALUE, e.g. BLOCK_K=64")
            args += ["--set", text]
        if not args:
            raise HTTPException(400, "give a variant source or at least one NAME=VALUE")
        return args

    @app.get("/api/scopes/{name:path}")
    def stored_scope(name: str) -> dict[str, Any]:
        """A stored ``kerntune scope --json`` result inside the programs folder: a dispatch list not run again."""
        path = inside_programs(name, "stored scope", (".json",))
        try:
            found: dict[str, Any] = json.loads(path.read_text())
        except ValueError as exc:
            raise HTTPException(400, f"{name!r} is not JSON ({exc})") from None
        if not isinstance(found, dict) or not isinstance(found.get("kernels"), list):
            raise HTTPException(400, f"{name!r} is not a kerntune scope --json result (no kernels list)")
        return found

    def launch(args: list[str]) -> dict[str, Any]:
        for arg in args:  # a NUL cannot pass into a program's arguments: refused here, not a 500 from exec
            if "\x00" in arg:
                raise HTTPException(400, f"argument {arg[:60]!r} holds a NUL byte: give plain text")
        if any(j.running for j in jobs.values()):
            raise HTTPException(409, "a job is running: wait for it or stop it first (one device, one job)")
        n = next(ids)
        jobs[n] = start_job(args, home / "web", f"job{n}", home)
        return {"job": n, "state": "running", "command": " ".join(jobs[n].argv[2:])}

    def job(n: int) -> Job:
        if n not in jobs:
            raise HTTPException(404, f"no job {n}")
        return jobs[n]

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        from kerntune.store.claims import ab_records

        db = store()
        return pages.runs_page(db.runs(200), spec_names(), ab_records(db, limit=50))

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(run_id: str) -> str:
        from kerntune.report.page import render
        from kerntune.report.summary import build_report

        db = store()
        found = db.get_run(checked_name(run_id, "run"))
        html = render(build_report(db, found), db.measured_at(found.id))
        nav = '<nav><a href="/">runs</a> · <a href="/lab">lab</a></nav>'
        form = pages.diff_form(found.id, db.candidates(found.id))
        return html.replace("<body>", f"<body>{nav}", 1).replace("</body>", f"{form}</body>", 1)

    @app.get("/runs/{run_id}/diff", response_class=HTMLResponse)
    def diff(run_id: str, a: int, b: int) -> str:
        db = store()
        found = db.get_run(checked_name(run_id, "run"))
        by_id = {c.id: c for c in db.candidates(found.id)}
        if a not in by_id or b not in by_id:
            raise HTTPException(404, f"candidates {a} and {b} must both belong to run {found.id}")
        return pages.diff_page(found.id, by_id[a], by_id[b])

    @app.get("/lab", response_class=HTMLResponse)
    def lab() -> str:
        return pages.lab_page(captures())

    @app.get("/dispatches", response_class=HTMLResponse)
    def dispatches() -> str:
        found = sorted(
            str(p.relative_to(programs)) for p in programs.rglob("*.py") if not hidden(p.relative_to(programs).parts)
        )
        return pages.dispatches_page(found[:500])

    @app.post("/api/dispatches")
    def list_dispatches(request: ProgramRequest) -> dict[str, Any]:
        window = ["--region", request.region] if request.profile and request.region else []
        return launch(["scope" if request.profile else "launches", *window, *program_command(request)])

    @app.post("/api/lab/captures")
    def start_capture(request: CaptureRequest) -> dict[str, Any]:
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", request.kernel)[:60]
        name = f"{stem}-{request.nth}-{time.strftime('%Y%m%dT%H%M%S')}"
        match: list[str] = []
        if request.gemm is not None:
            from kerntune.lab.operator import match_for

            match = ["--match", match_for(request.gemm)]
        return {
            **launch(
                [
                    "capture",
                    "--kernel",
                    request.kernel,
                    "--nth",
                    str(request.nth),
                    *match,
                    "-o",
                    str(home / "captures" / name),
                    *program_command(request),
                ]
            ),
            "capture": name,
        }

    @app.post("/api/lab/{name}/compare")
    def start_compare(name: str, request: VariantRequest) -> dict[str, Any]:
        return launch(
            ["lab", "compare", str(capture_path(name)), *variant_args(request), "--iterations", str(request.iterations)]
        )

    @app.post("/api/lab/{name}/save")
    def start_save(name: str, request: VariantRequest) -> dict[str, Any]:
        table = ["--table", str(in_programs(request.table, ".json"))] if request.spec and request.table else []
        return launch(["lab", "save", str(capture_path(name)), *variant_args(request), *table])

    @app.get("/api/runs")
    def api_runs() -> list[dict[str, Any]]:
        return [
            {
                "id": r.id,
                "problem": r.problem,
                "device": r.target.device_name,
                "strategy": r.strategy,
                "status": r.status,
                "created": r.created,
            }
            for r in store().runs(200)
        ]

    @app.get("/api/runs/{run_id}")
    def api_run(run_id: str) -> dict[str, Any]:
        from kerntune.report.summary import build_report, report_json

        db = store()
        return report_json(build_report(db, db.get_run(checked_name(run_id, "run"))))

    @app.get("/api/lab")
    def captures() -> list[dict[str, Any]]:
        from kerntune.lab.session import history  # the lab (and torch) only when its page is asked for

        root, found = home / "captures", []
        for folder in sorted(root.iterdir() if root.is_dir() else []):
            manifest = folder / "manifest.json"
            if CAPTURE_NAME.match(folder.name) and manifest.is_file():
                data = json.loads(manifest.read_text())
                found.append(
                    {
                        "name": folder.name,
                        "kernel": data.get("kernel", {}).get("name"),
                        "language": data.get("kernel", {}).get("language"),
                        "closed": data.get("closed"),
                        "history": history(folder)[-50:],
                    }
                )
        return found

    @app.post("/api/tunes")
    def start_tune(request: TuneRequest) -> dict[str, Any]:
        from kerntune.tune.inputs import parse_value

        if request.strategy not in pages.STRATEGIES:
            raise HTTPException(400, f"strategy {request.strategy!r}: one of {', '.join(pages.STRATEGIES)}")
        args = ["tune", str(spec_path(request.spec)), "--strategy", request.strategy]
        if request.budget:
            Budget.parse([request.budget])  # a malformed budget is refused here, with the parser's message
            args += ["--budget", request.budget]
        for shape in request.shapes:
            for part in shape.split(","):  # a value that is not finite is refused here, in the tune's own words
                name, _, value = part.partition("=")
                parse_value(value.strip(), f"shape {name.strip()}")
            args += ["--shape", shape]
        if request.workers is not None:
            args += ["--workers", str(request.workers)]
        return launch([*args, "--executor", request.executor])

    @app.post("/api/lab/{name}/replay")
    def start_replay(name: str, request: ReplayRequest) -> dict[str, Any]:
        if request.mode not in ("isolated", "sustained", "replays"):
            raise HTTPException(400, f"mode {request.mode!r}: isolated, sustained or replays")
        return launch(
            ["replay", str(capture_path(name)), "--mode", request.mode, "--iterations", str(request.iterations)]
        )

    @app.get("/api/jobs/{n}")
    def job_state(n: int) -> dict[str, Any]:
        return {"job": n, **job(n).state()}

    @app.post("/api/jobs/{n}/stop")
    def job_stop(n: int) -> dict[str, Any]:
        job(n).stop()
        return {"job": n, **job(n).state()}

    return app
