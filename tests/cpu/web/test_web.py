"""``kerntune web``'s app through FastAPI's test client: a PoCL tune started and followed through the API, its
run page carrying the stored numbers, the candidate diff, the lab listing and a replay; the token (401 without
it), names from requests that try to leave the store or the spec folder, and malformed requests (4xx with a
message, never a 500). The browser test is tests/cpu/web/test_web_browser.py."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, EXAMPLES, FAST_ENV, KERNELS, CliResult

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi import FastAPI
from fastapi.testclient import TestClient

from kerntune.web.app import create_app

TOKEN = "t" * 24


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name, value in FAST_ENV.items():
        monkeypatch.setenv(name, value)  # the tune jobs inherit the tests' quick measurement settings
    yield tmp_path / "store"


def _client(app: FastAPI) -> TestClient:
    """A client that carries the app's token, as the page does after its first load."""
    return TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})


def _wait(client: TestClient, job: int, limit_s: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + limit_s
    while True:
        state: dict[str, Any] = client.get(f"/api/jobs/{job}").json()
        if state["state"] != "running" or time.monotonic() > deadline:
            return state
        time.sleep(0.5)


def test_a_tune_started_and_followed_through_the_api(home: Path) -> None:
    client = _client(create_app(home, EXAMPLES, TOKEN))
    assert "opencl_vector_add" in client.get("/").text
    started = client.post("/api/tunes", json={"spec": "opencl_vector_add", "budget": "4"})
    assert started.status_code == 200, started.text
    busy = client.post("/api/tunes", json={"spec": "opencl_vector_add", "budget": "4"})
    assert busy.status_code == 409 and "a job is running" in busy.json()["detail"]
    state = _wait(client, started.json()["job"])
    assert state["state"] == "done", state
    run_id = state["result"]["run"]["id"]
    winner = client.get(f"/api/runs/{run_id}").json()["shapes"][0]["winner"]
    page = client.get(f"/runs/{run_id}").text
    median = (winner.get("confirmed") or winner["measurement"])["median_ms"]
    assert f'data-median-ms="{median:.6g}"' in page and "Compare two candidates" in page
    ids = [c["id"] for c in [winner, *client.get(f"/api/runs/{run_id}").json()["shapes"][0]["baselines"]]]
    diff = client.get(f"/runs/{run_id}/diff", params={"a": ids[0], "b": ids[1]})
    assert diff.status_code == 200 and "median_ms" in diff.text
    assert client.get("/api/runs").json()[0]["id"] == run_id


def test_stopping_a_running_tune(home: Path) -> None:
    client = _client(create_app(home, EXAMPLES, TOKEN))
    started = client.post("/api/tunes", json={"spec": "opencl_matmul", "budget": "50"}).json()
    stopped = client.post(f"/api/jobs/{started['job']}/stop")
    assert stopped.status_code == 200 and stopped.json()["state"] == "failed"


def test_the_lab_page_lists_captures_and_replays_one(
    home: Path, kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    lab = tmp_path / "lab"
    shutil.copytree(DATA / "lab", lab)
    done = kerntune(
        "lab",
        "capture",
        "--kernel",
        "axpy",
        "--nth",
        "2",
        "-o",
        str(home / "captures" / "axpy2"),
        "--",
        "python",
        str(lab / "opencl_program.py"),
    )
    assert done.code == 0, done.stderr
    client = _client(create_app(home, EXAMPLES, TOKEN))
    assert "axpy2" in client.get("/lab").text
    started = client.post("/api/lab/axpy2/replay", json={"iterations": 3})
    assert started.status_code == 200, started.text
    state = _wait(client, started.json()["job"])
    assert state["state"] == "done" and state["result"]["reproduces_capture"] is True, state
    assert client.get("/api/lab").json()[0]["history"][-1]["job"] == "replay"


def test_token_traversal_and_malformed_requests(home: Path, tmp_path: Path) -> None:
    client = TestClient(create_app(home, EXAMPLES, token=TOKEN))
    assert client.get("/").status_code == 401 and client.get("/api/runs").status_code == 401
    assert client.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get("/", params={"token": TOKEN}).status_code == 200  # sets the cookie the page then sends
    assert client.get("/api/runs").status_code == 200
    outside = tmp_path / "outside"
    (outside / "evil").mkdir(parents=True)
    (outside / "evil" / "spec.py").write_text("raise SystemExit('must never run')\n")
    for spec in ("../outside/evil", str(outside / "evil"), "/etc", "opencl_vector_add/../../outside/evil"):
        refused = client.post("/api/tunes", json={"spec": spec})
        assert refused.status_code == 400 and "outside the spec folder" in refused.json()["detail"], spec
    for name in ("..%2F..%2Fetc", "..", ".hidden", "nope"):
        assert client.post(f"/api/lab/{name}/replay", json={}).status_code == 404, name
    assert client.get("/api/runs/..%2F..%2Fetc%2Fpasswd").status_code == 404  # matches no route at all
    for ref in ("%25", "_", "last%27%3B--"):  # LIKE wildcards are matched as themselves; SQL is bound
        missing = client.get(f"/api/runs/{ref}")
        assert missing.status_code == 404 and "no tuning run" in missing.json()["detail"], (ref, missing.text)
    bad = [
        client.post("/api/tunes", content=b"{not json", headers={"Content-Type": "application/json"}),
        client.post("/api/tunes", json={"spec": 3}),
        client.post("/api/tunes", json={}),
        client.post("/api/tunes", json={"spec": "opencl_vector_add", "strategy": "guess"}),
        client.post("/api/tunes", json={"spec": "opencl_vector_add", "budget": "lots"}),
        client.post("/api/tunes", json={"spec": "opencl_vector_add", "workers": 0}),
        client.post("/api/tunes", json={"spec": "opencl_vector_add", "executor": "slurm"}),
        client.post("/api/lab/x/replay", json={"iterations": 0}),
        client.get("/runs/x/diff", params={"a": "one", "b": 2}),
        client.get("/api/jobs/77"),
    ]
    for response in bad:
        assert 400 <= response.status_code < 500 and response.json().get("detail"), response.text


NON_FINITE_TUNES = {
    b'{"spec": "opencl_vector_add", "shapes": ["N=nan"]}': "shape N='nan' is not a finite number",
    b'{"spec": "opencl_vector_add", "shapes": ["N=4096", "N=-inf"]}': "shape N='-inf' is not a finite number",
    b'{"spec": "opencl_vector_add", "shapes": ["N=1e999"]}': "shape N='1e999' is not a finite number",
    b'{"spec": "opencl_vector_add", "shapes": [NaN]}': "shapes[0]=NaN is not a finite number",
    b'{"spec": "opencl_vector_add", "budget": NaN}': "budget=NaN is not a finite number",
    b'{"spec": "opencl_vector_add", "budget": Infinity}': "budget=Infinity is not a finite number",
    b'{"spec": "opencl_vector_add", "budget": "nan"}': "--budget 'nan': give an evaluation count",
    b'{"spec": "opencl_vector_add", "budget": "inf"}': "--budget 'inf': give an evaluation count",
    b'{"spec": "opencl_vector_add", "workers": NaN}': "workers=NaN is not a finite number",
    b'{"spec": "opencl_vector_add", "workers": 1e999}': "workers=Infinity is not a finite number",
    b'{"spec": "opencl_vector_add", "workers": "-inf"}': "workers='-inf' is not a finite number",
    b'{"workers": -Infinity}': "workers=-Infinity is not a finite number",
}


def test_a_tune_with_nan_or_infinity_is_a_400_naming_the_field(home: Path) -> None:
    """NaN and infinities, as JSON's missing numbers (which Python's parser reads) or as text, in a shape, the
    budget or the worker count: one line naming the field and what to give, and no job started."""
    client = _client(create_app(home, EXAMPLES, TOKEN))
    for body, expected in NON_FINITE_TUNES.items():
        answer = client.post("/api/tunes", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 400, (body, answer.status_code, answer.text)
        detail = answer.json()["detail"]
        assert isinstance(detail, str) and "\n" not in detail and expected in detail, (body, detail)
        assert "give" in detail, detail
    assert client.get("/api/jobs/1").status_code == 404 and not (home / "web").exists()  # no job started
    nan_gemm = b'{"program": "app.py", "kernel": "k", "gemm": {"shape": {"M": NaN}}}'
    answer = client.post("/api/lab/captures", content=nan_gemm, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400 and "gemm.shape.M=NaN" in answer.json()["detail"], answer.text


def test_serve_refuses_to_bind_beyond_loopback_without_a_token(kerntune: Callable[..., CliResult]) -> None:
    open_wide = kerntune("web", "--host", "0.0.0.0")
    assert open_wide.code == 2 and "give --token" in open_wide.stderr
    short = kerntune("web", "--host", "0.0.0.0", "--token", "abc")
    assert short.code == 2 and "at least 16 characters" in short.stderr


def test_the_runs_page_lists_ab_verdicts_escaped(home: Path) -> None:
    from kerntune.store import Store
    from kerntune.store.claims import ABRecord, save_ab

    save_ab(
        Store(home),
        ABRecord(
            "ab1",
            "2026-11-30T00:00:00Z",
            "ab",
            {"label": "<b>A</b>"},
            {"label": "B"},
            {},
            {},
            "in-process",
            1.031,
            1.02,
            1.04,
            0.01,
            "loss",
            "loss",
            False,
            "",
            {},
            3.0,
        ),
    )
    page = _client(create_app(home, EXAMPLES, TOKEN)).get("/").text
    assert "A/B verdicts" in page and "<b>loss</b>" in page and "1.0310" in page and "1.0200–1.0400" in page
    assert "&lt;b&gt;A&lt;/b&gt;" in page and "<b>A</b>" not in page


def test_programs_and_variants_stay_inside_the_programs_folder(home: Path, tmp_path: Path) -> None:
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "app.py").write_text("print('ok')\n")
    (programs / "notes.txt").write_text("not a program\n")
    (tmp_path / "evil.py").write_text("raise SystemExit('must never run')\n")
    client = _client(create_app(home, EXAMPLES, TOKEN, programs_root=programs))
    assert "app.py" in client.get("/dispatches").text and "notes.txt" not in client.get("/dispatches").text
    for program in ("../evil.py", str(tmp_path / "evil.py"), "notes.txt", "missing.py", "/etc/passwd"):
        refused = client.post("/api/dispatches", json={"program": program})
        assert refused.status_code == 400 and "inside the programs folder" in refused.json()["detail"], program
        refused = client.post("/api/lab/captures", json={"program": program, "kernel": "axpy"})
        assert refused.status_code == 400, program
    for kernel in ("", "a b", "x;rm -rf /", "-o/tmp/x"):  # a kernel name is a name, never an option or a shell word
        assert client.post("/api/lab/captures", json={"program": "app.py", "kernel": kernel}).status_code == 422
    assert client.post("/api/lab/nope/compare", json={"sets": ["BLOCK=64"]}).status_code == 404


def test_a_stored_scope_operator_calls_and_served_tables_through_the_api(home: Path, tmp_path: Path) -> None:
    """The dispatch list from a stored ``kerntune scope --json`` (the H200's, of the Llama example's compiled
    prefill), a GEMM line's "Tune this kernel" as an operator capture selecting that shape, dtype and layout, a
    spec compare and its save into a served table inside the programs folder, a steady-state region; refusals."""
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "app.py").write_text("print('ok')\n")
    scope = DATA / "scope_h200" / "prefill_compiled_scope.json"
    shutil.copyfile(scope, programs / "scope.json")
    (programs / "other.json").write_text('{"runs": []}')
    client = _client(create_app(home, EXAMPLES.parent, TOKEN, programs_root=programs))
    stored = client.get("/api/scopes/scope.json")
    assert stored.status_code == 200 and stored.json()["kernels"][0]["class"] == "vendor BLAS"
    assert 'onclick="storedScope()"' in client.get("/dispatches").text
    for name, why in (
        ("other.json", "no kernels list"),
        ("..%2F..%2Fscope.json", "inside the programs folder"),
        ("app.py", "inside the programs folder"),
    ):
        refused = client.get(f"/api/scopes/{name}")
        assert refused.status_code == 400 and why in refused.text, (name, refused.text)

    def started(url: str, body: dict[str, Any]) -> str:
        answer = client.post(url, json=body)
        assert answer.status_code == 200, answer.text
        _wait(client, answer.json()["job"])  # one job at a time: let it end (these programs capture nothing)
        return str(answer.json()["command"])

    listed = started("/api/dispatches", {"program": "app.py", "profile": True, "region": "step"})
    assert "scope --region step --json -- python" in listed, listed
    assert (
        client.post("/api/dispatches", json={"program": "app.py", "profile": True, "region": "a b"}).status_code == 422
    )
    gemm = stored.json()["gemms"][0]
    command = started("/api/lab/captures", {"program": "app.py", "kernel": "aten::mm", "gemm": gemm})
    assert r"--match ^aten::mm(\.out)?\(8192x4096:bfloat16, 4096x14336:bfloat16:T(,|\))" in command, command
    capture = home / "captures" / "mm"
    capture.mkdir(parents=True)
    (capture / "manifest.json").write_text("{}")
    spec = {"spec": "kernels/triton_gemm", "sets": ["BLOCK_M=128"]}
    command = started("/api/lab/mm/compare", spec)
    assert f"--spec {KERNELS / 'triton_gemm'}" in command and "--set BLOCK_M=128" in command, command
    command = started("/api/lab/mm/save", {**spec, "table": "served.json"})
    assert command.endswith(f"--table {programs / 'served.json'} --json"), command
    for table in ("../served.json", "served.txt", "missing/served.json"):
        refused = client.post("/api/lab/mm/save", json={**spec, "table": table})
        assert refused.status_code == 400 and "inside the programs folder" in refused.json()["detail"], table
    assert client.post("/api/lab/mm/compare", json={"spec": "../etc"}).status_code == 400


def test_a_rebinding_page_and_a_request_without_the_token_are_refused(home: Path) -> None:
    """A page on another origin whose DNS name now points at 127.0.0.1 sends its own Host (421) or Origin (403);
    a request without the per-start token is refused (401) on loopback too; none of them starts a job."""
    client = TestClient(create_app(home, EXAMPLES, TOKEN, host="127.0.0.1"), base_url="http://127.0.0.1:8765")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = {"program": "opencl_vector_add/spec.py"}
    rebound = client.post("/api/dispatches", json=body, headers={**auth, "Host": "evil.example:8765"})
    assert rebound.status_code == 421 and "not this server's address" in rebound.json()["detail"], rebound.text
    foreign = client.post("/api/dispatches", json=body, headers={**auth, "Origin": "http://evil.example:8765"})
    assert foreign.status_code == 403 and "requests from other sites" in foreign.json()["detail"], foreign.text
    for tokenless in (client.post("/api/dispatches", json=body), client.post("/api/tunes", json={"spec": "x"})):
        assert tokenless.status_code == 401 and "?token=" in tokenless.json()["detail"], tokenless.text
    assert client.get("/api/jobs/1", headers=auth).status_code == 404  # nothing was started
    same = client.get("/api/runs", headers={**auth, "Origin": "http://127.0.0.1:8765", "Host": "localhost:8765"})
    assert same.status_code == 403  # the Origin must be the page the request names as Host
    for host in ("127.0.0.1:8765", "localhost:8765"):
        assert client.get("/api/runs", headers={**auth, "Host": host}).status_code == 200, host
    opened = client.get("/", params={"token": TOKEN})  # the printed URL: the page keeps the token as a cookie
    assert opened.status_code == 200 and client.get("/api/runs").status_code == 200


def test_the_generated_token_is_random_per_start(home: Path) -> None:
    first, second = create_app(home, EXAMPLES), create_app(home, EXAMPLES)
    assert len(first.state.token) >= 32 and first.state.token != second.state.token
    assert TestClient(first).get("/api/runs").status_code == 401


def test_nul_bytes_long_names_and_hidden_folders_get_a_400_with_a_reason(home: Path, tmp_path: Path) -> None:
    programs = tmp_path / "programs"
    (programs / ".hidden").mkdir(parents=True)
    (programs / ".hidden" / "secret.py").write_text("raise SystemExit('must never run')\n")
    (programs / "app.py").write_text("print('ok')\n")
    client = _client(create_app(home, EXAMPLES, TOKEN, programs_root=programs))
    assert ".hidden" not in client.get("/dispatches").text
    for program in (".hidden/secret.py", "./.hidden/secret.py", "x/../.hidden/secret.py"):
        refused = client.post("/api/dispatches", json={"program": program})
        assert refused.status_code == 400 and "hidden folder" in refused.json()["detail"], (program, refused.text)
    answers = {
        "NUL program": client.post("/api/dispatches", json={"program": "app\x00.py"}),
        "NUL spec": client.post("/api/tunes", json={"spec": "opencl_vector_add\x00"}),
        "long program": client.post("/api/dispatches", json={"program": "a" * 300 + ".py"}),
        "long spec": client.post("/api/tunes", json={"spec": "b" * 999}),
        "NUL argument": client.post("/api/dispatches", json={"program": "app.py", "args": ["x\x00y"]}),
        "NUL run": client.get("/api/runs/a%00b"),
        "long run": client.get("/api/runs/" + "r" * 60_000),
        "NUL capture": client.post("/api/lab/a%00b/replay", json={}),
        "hidden spec": client.post("/api/tunes", json={"spec": ".git"}),
    }
    for what, answer in answers.items():
        assert answer.status_code in (400, 404, 414, 422), (what, answer.status_code, answer.text)
        detail = answer.json()["detail"]
        assert isinstance(detail, (str, list)) and detail, (what, answer.text)
    assert answers["NUL program"].status_code == 400 and "NUL" in answers["NUL program"].json()["detail"]
    assert answers["long program"].status_code == 400 and "255 bytes" in answers["long program"].json()["detail"]
    assert answers["long spec"].status_code == 400 and "255 bytes" in answers["long spec"].json()["detail"]
    assert answers["NUL argument"].status_code == 400 and "NUL" in answers["NUL argument"].json()["detail"]
    assert answers["long run"].status_code == 400 and "at most 1000" in answers["long run"].json()["detail"]
    assert answers["hidden spec"].status_code == 400 and "hidden folder" in answers["hidden spec"].json()["detail"]


def test_a_server_started_without_a_token_prints_the_one_it_made(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kerntune.web.start import page_url

    app = create_app(home, EXAMPLES)
    with TestClient(app) as client:  # the context runs the app's start-up, which prints the token
        assert client.get("/api/runs").status_code == 401
        assert client.get("/api/runs", params={"token": app.state.token}).status_code == 200
    assert f"?token={app.state.token}" in capsys.readouterr().out
    assert page_url("0.0.0.0", 8765, "t") == "http://127.0.0.1:8765/?token=t"
    assert page_url("::1", 9000, "t") == "http://[::1]:9000/?token=t"
