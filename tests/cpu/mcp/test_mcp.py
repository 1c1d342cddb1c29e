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

        sid = _payload(await client.call_tool("tuning_open", {"spec": str(EXAMPLES / "opencl_vector_add")}))["session"]
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
    seen = asyncio.run(_lab_flow(tmp_path / "store", lab))
    assert seen["capture"]["state"] == "done", seen["capture"]
    assert seen["run"]["state"] == "done" and seen["run"]["result"]["reproduces_capture"] is True, seen["run"]
    assert seen["compare"]["result"]["validation"]["passed"] is True, seen["compare"]
    assert seen["save"]["state"] == "done", seen["save"]
    assert "the loads in the other order" in (lab / "opencl_kernels.py").read_text()
    assert "inputs.safetensors" in seen["closed"]["lab"]["removed"]  # closing deleted the captured tensors
