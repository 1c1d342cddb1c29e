"""``kerntune mcp`` through the MCP SDK's own client over stdio, on a PoCL problem: open, search, status until
done, select, the run as a resource, refusals answered as tool errors, close."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, FAST_ENV

mcp = pytest.importorskip("mcp")


def _failed(result: Any) -> bool:
    """A tool error (``is_error`` in mcp 2, ``isError`` in mcp 1)."""
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _payload(result: Any) -> dict[str, Any]:
    assert not _failed(result), result.content
    structured = getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)
    if structured:  # a dict return, or {"result": ...} where the SDK wrapped another type
        return dict(structured["result"] if set(structured) == {"result"} else structured)
    return dict(json.loads(result.content[0].text))


async def _session_flow(home: Path) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kerntune", "mcp"],
        env={**os.environ, **FAST_ENV, "KERNTUNE_HOME": str(home)},
        cwd=str(EXAMPLES.parent),  # the server's root folder: the examples' specs lie inside it
    )
    seen: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        tools = {t.name for t in (await client.list_tools()).tools}
        seen["tools"] = tools
        opened = _payload(await client.call_tool("tuning_open", {"spec": str(EXAMPLES / "opencl_vector_add")}))
        sid = opened["session"]
        started = _payload(
            await client.call_tool("tuning_action", {"session": sid, "action": "search", "args": {"budget": "4"}})
        )
        seen["started"] = started
        busy = await client.call_tool("tuning_action", {"session": sid, "action": "search"})
        seen["busy"] = _failed(busy), busy.content[0].text
        deadline = time.monotonic() + 300
        status = _payload(await client.call_tool("tuning_status", {"session": sid}))
        while status["state"] == "running" and time.monotonic() < deadline:
            await asyncio.sleep(1)
            status = _payload(await client.call_tool("tuning_status", {"session": sid}))
        seen["status"] = status
        seen["selected"] = _payload(await client.call_tool("tuning_action", {"session": sid, "action": "select"}))
        run_id = status["runs"][-1]
        resource = await client.read_resource(f"kerntune://runs/{run_id}")
        seen["resource"] = json.loads(resource.contents[0].text)
        wrong = await client.call_tool("tuning_action", {"session": sid, "action": "fly"})
        seen["wrong"] = _failed(wrong), wrong.content[0].text
        seen["closed"] = _payload(await client.call_tool("tuning_close", {"session": sid}))
        gone = await client.call_tool("tuning_status", {"session": sid})
        seen["gone"] = _failed(gone), gone.content[0].text
    return seen


def test_open_search_status_select_close_over_stdio(tmp_path: Path) -> None:
    seen = asyncio.run(_session_flow(tmp_path / "store"))
    assert {"tuning_open", "tuning_status", "tuning_action", "tuning_close"} <= seen["tools"]
    assert seen["started"]["state"] == "running" and seen["started"]["command"].startswith("kerntune tune ")
    assert seen["busy"][0] and "still running" in seen["busy"][1]
    status = seen["status"]
    assert status["state"] == "done", status
    winner = status["result"]["shapes"][0]["winner"]
    assert seen["selected"]["selected"] == winner["config"]  # select picks the gated winner the search reported
    assert seen["resource"]["shapes"][0]["winner"]["config"] == winner["config"]
    assert seen["wrong"][0] and "one of search, select" in seen["wrong"][1]
    assert seen["closed"]["closed"] is True and seen["gone"][0] and "no open session" in seen["gone"][1]


async def _lab_flow(home: Path, lab: Path) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kerntune", "mcp"],
        env={**os.environ, **FAST_ENV, "KERNTUNE_HOME": str(home)},
        cwd=str(lab.parent),  # the server's root folder: the lab's programs and the copied spec lie inside it
    )
    seen: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()

        async def finish(action: str, args: dict[str, Any]) -> dict[str, Any]:
            _payload(await client.call_tool("tuning_action", {"session": sid, "action": action, "args": args}))
            status = _payload(await client.call_tool("tuning_status", {"session": sid}))
            while status["state"] == "running":
                await asyncio.sleep(0.5)
                status = _payload(await client.call_tool("tuning_status", {"session": sid}))
            return status

        sid = _payload(await client.call_tool("tuning_open", {"spec": str(lab.parent / "opencl_vector_add")}))[
            "session"
        ]
        seen["capture"] = await finish(
            "capture", {"kernel": "axpy", "nth": 2, "command": ["python", str(lab / "opencl_program.py")]}
        )
        seen["run"] = await finish("run", {"iterations": 3})
        seen["compare"] = await finish("run", {"variant": str(lab / "axpy_ok.cl"), "iterations": 3})
        seen["save"] = await finish("save", {"variant": str(lab / "axpy_ok.cl")})
        seen["closed"] = _payload(await client.call_tool("tuning_close", {"session": sid}))
    return seen


def test_capture_run_compare_save_over_stdio(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import DATA

    lab = tmp_path / "lab"
    shutil.copytree(DATA / "lab", lab)
    shutil.copytree(EXAMPLES / "opencl_vector_add", tmp_path / "opencl_vector_add")
    seen = asyncio.run(_lab_flow(tmp_path / "store", lab))
    assert seen["capture"]["state"] == "done", seen["capture"]
    assert seen["run"]["state"] == "done" and seen["run"]["result"]["reproduces_capture"] is True, seen["run"]
    assert seen["compare"]["result"]["validation"]["passed"] is True, seen["compare"]
    assert seen["save"]["state"] == "done", seen["save"]
    assert "the loads in the other order" in (lab / "opencl_kernels.py").read_text()
    assert "inputs.safetensors" in seen["closed"]["lab"]["removed"]  # closing deleted the captured tensors


async def _refusals(home: Path, root: Path, outside: Path) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kerntune", "mcp"],
        env={**os.environ, **FAST_ENV, "KERNTUNE_HOME": str(home)},
        cwd=str(root),
    )
    seen: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        for name, path in (("outside", outside), ("climbing", root / ".." / outside.name), ("nul", "spec\x00.py")):
            answer = await client.call_tool("tuning_open", {"spec": str(path)})
            seen[name] = _failed(answer), answer.content[0].text
        on_spec = _payload(await client.call_tool("tuning_open", {"spec": str(root / "spec")}))["session"]
        on_capture = _payload(await client.call_tool("tuning_open", {"capture": str(root / "spec")}))["session"]
        for name, sid, action, args in (
            ("variant", on_capture, "run", {"variant": str(outside / "spec.py")}),
            ("table", on_capture, "save", {"set": {"N": 1}, "table": str(outside / "table.json")}),
            ("program", on_spec, "capture", {"kernel": "axpy", "command": ["python", str(outside / "spec.py")]}),
        ):
            answer = await client.call_tool("tuning_action", {"session": sid, "action": action, "args": args})
            seen[name] = _failed(answer), answer.content[0].text
    return seen


def test_paths_outside_the_root_folders_are_refused_over_stdio(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    for folder in (root / "spec", outside):
        folder.mkdir(parents=True)
        (folder / "spec.py").write_text("raise SystemExit('must never run')\n")
    seen = asyncio.run(_refusals(tmp_path / "store", root, outside))
    for name in ("outside", "climbing", "variant", "table", "program"):
        failed, text = seen[name]
        assert failed and "outside this server's root folders" in text and str(root) in text, (name, text)
    assert seen["nul"][0] and "without NUL bytes" in seen["nul"][1], seen["nul"]


def test_list_arguments_given_as_one_string_are_split_as_a_command_line(tmp_path: Path) -> None:
    from kerntune.errors import UsageError
    from kerntune.mcp.server import Session, action_argv, read_as

    spec = tmp_path / "spec"
    session = Session("s", tmp_path / "work", (tmp_path,), spec=str(spec))
    as_string = {"extra": "--seed 7 --dtype 'float 32'", "shapes": "M=64,N=32"}
    argv = action_argv(session, "search", as_string)
    assert isinstance(argv, list) and argv[-4:] == ["--seed", "7", "--dtype", "float 32"], argv
    assert argv[2:4] == ["--shape", "M=64,N=32"], argv  # one shape, not one per character
    assert action_argv(session, "search", {"extra": ["--seed", 7]}) == ["tune", str(spec), "--seed", "7"]
    said = read_as(as_string)
    assert "split by shell rules into ['--seed', '7', '--dtype', 'float 32']" in said[0] and "one shape" in said[1]
    assert read_as({"extra": ["--seed", "7"]}) == []
    for bad in ({"extra": {"seed": 7}}, {"extra": "'unclosed"}, {"extra": [True]}):
        with pytest.raises(UsageError, match=r"args\.extra"):
            action_argv(session, "search", bad)
    with pytest.raises(UsageError, match="outside this server's root folders"):
        action_argv(session, "capture", {"kernel": "k", "command": "python /etc/evil.py"})
    captured = action_argv(session, "capture", {"kernel": "k", "command": f"python {tmp_path / 'app.py'} --n 3"})
    assert isinstance(captured, list) and captured[-4:] == ["python", str(tmp_path / "app.py"), "--n", "3"]
