"""The lab driven through the web page's own HTTP API, as its buttons drive it, on a real program:

    python3 benchmarks/lab/lab_web_drive.py PROGRAMS_DIR OUT_DIR -- ARGS...

starts ``kerntune serve --programs PROGRAMS_DIR`` (the store at $KERNTUNE_HOME, specs from the repository root) on
loopback and, with the requests the page sends: lists ``app.py``'s dispatches by device-time share in its steady
state ("by GPU time", region ``step``: ``kerntune scope --region step``), takes the hottest Inductor kernel and
the hottest GEMM operator line, or the one of shape $GEMM (``MxNxK``) ("Tune this kernel" on each), replays each
capture, compares the GEMM call with ``kernels/triton_gemm`` at the config of $TABLE's entry for its shape (the
spec's default without one), at the configs $CANDIDATES (a ``benchmarks/gemm/decode_gemm.py`` report) checked for that
shape and at those $CONFIGS names (``NAME=VALUE,...;NAME=VALUE,...``), and saves the fastest into
PROGRAMS_DIR/served.json when it is not slower than the library. Every request and its job's outcome go to
OUT_DIR/web.jsonl; the dispatch list is kept as OUT_DIR/scope.json and PROGRAMS_DIR/scope.json (what the page's
"stored scope" reads). Exit 0 when every step answered, 1 otherwise."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    programs, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    args = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "kerntune", "serve", "--port", str(port), "--specs", ".", "--programs", str(programs)],
        stdout=(out / "serve.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    log = (out / "web.jsonl").open("w")
    failed = 0
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        for _ in range(150):
            try:
                client.get("/lab")
                break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            print(f"kerntune serve did not answer within 30 s: see {out / 'serve.log'}", file=sys.stderr)
            return 1

        def job(what: str, url: str, body: dict[str, Any]) -> dict[str, Any]:
            nonlocal failed
            began = time.time()
            started = client.post(url, json=body)
            row: dict[str, Any] = {
                "step": what,
                "url": url,
                "body": body,
                "status": started.status_code,
                "started": started.json(),
            }
            state: dict[str, Any] = {}
            if started.status_code == 200:
                while True:
                    state = client.get(f"/api/jobs/{started.json()['job']}").json()
                    if state["state"] != "running":
                        break
                    time.sleep(1)
            row.update(
                state=state.get("state"),
                error=state.get("error"),
                wall_s=round(time.time() - began, 1),
                result=state.get("result"),
            )
            log.write(json.dumps(row) + "\n")
            log.flush()
            print(f"{what}: {row['state'] or row['status']} after {row['wall_s']} s {row['error'] or ''}", flush=True)
            failed += row["state"] != "done"
            return row

        program = {"program": "app.py", "args": args}
        listed = job(
            "dispatch list (by GPU time, region step)",
            "/api/dispatches",
            {**program, "profile": True, "region": "step"},
        )
        scope = listed.get("result") or {}
        for where in (out / "scope.json", programs / "scope.json"):
            where.write_text(json.dumps(scope, indent=1))
        inductor = [k for k in scope.get("kernels", []) if str(k.get("class", "")).startswith("Triton")]
        gemms = [g for g in scope.get("gemms", []) if str(g.get("op", "")).startswith("aten::mm")]
        names: dict[str, str] = {}
        if inductor:
            hottest = max(inductor, key=lambda k: k.get("device_us", 0))
            row = job(
                f"tune this kernel: {hottest['name']}",
                "/api/lab/captures",
                {**program, "kernel": hottest["name"], "nth": 1},
            )
            names["generated"] = row["started"].get("capture", "")
        if gemms:
            gemm = pick_gemm(gemms)
            row = job(
                f"tune this kernel: {gemm['op']} {gemm['shape']}",
                "/api/lab/captures",
                {**program, "kernel": gemm["op"].removesuffix(".out"), "nth": 1, "gemm": gemm},
            )
            names["gemm"] = row["started"].get("capture", "")
        for name in names.values():
            job(f"replay {name}", f"/api/lab/{name}/replay", {"mode": "isolated", "iterations": 100})
        if names.get("gemm"):
            shape = pick_gemm(gemms)["shape"]
            best: tuple[float, dict[str, Any]] | None = None
            for origin, sets in candidate_sets(shape):
                variant = {"spec": "kernels/triton_gemm", "sets": sets, "iterations": 100}
                compared = job(
                    f"compare with kernels/triton_gemm at {origin}: {' '.join(sets) or 'its default'}",
                    f"/api/lab/{names['gemm']}/compare",
                    variant,
                )
                ratio = (compared.get("result") or {}).get("interleaved") or {}
                if ratio and (best is None or ratio["ratio"] < best[0]):
                    best = (ratio["ratio"], {"variant": variant, "ratio": ratio})
            if best and best[1]["ratio"]["ci"][0] <= 1.0:
                job(
                    "save into the served table",
                    f"/api/lab/{names['gemm']}/save",
                    {**best[1]["variant"], "table": "served.json"},
                )
            else:
                print(f"not saved: every config compared was slower than the library ({best})", flush=True)
        (out / "captures.json").write_text(json.dumps(names))
    finally:
        server.terminate()
        server.wait(10)
        log.close()
    return 1 if failed else 0


def pick_gemm(gemms: list[dict[str, Any]]) -> dict[str, Any]:
    """The GEMM line to capture: the one at $GEMM (``MxNxK``) where set (the hottest of them, if the program makes
    several calls of that shape), else the hottest; a $GEMM the program never calls is an error naming those it
    does."""
    wanted = os.environ.get("GEMM", "")
    if not wanted:
        return max(gemms, key=lambda g: g.get("device_us", 0))
    dims = [int(x) for x in wanted.lower().split("x")]
    found = [g for g in gemms if [g["shape"].get(k) for k in "MNK"] == dims]
    if not found:
        named = sorted({"x".join(str(g["shape"].get(k)) for k in "MNK") for g in gemms})
        raise SystemExit(f"GEMM={wanted}: the program makes no aten::mm call of that shape; it makes {named}")
    return max(found, key=lambda g: g.get("device_us", 0))


def candidate_sets(shape: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The configs to compare at this M, N, K, as NAME=VALUE lists with where each came from: the one $TABLE (a
    deployed table of kernels/triton_gemm) holds (the spec's default without one), then those $CANDIDATES (a
    ``benchmarks/gemm/decode_gemm.py`` report) checked by CUPTI for the same shape, fastest first."""
    from lab_model_picks import checked_configs, table_config

    path = os.environ.get("TABLE")
    found = table_config(path, shape["M"], shape["N"], shape["K"]) if path and Path(path).is_file() else {}
    out = [("the table's config" if found else "the spec's default", [f"{k}={v}" for k, v in found.items()])]
    sweep = os.environ.get("CANDIDATES")
    if sweep and Path(sweep).is_file():
        for config in checked_configs(sweep, shape["M"], shape["N"], shape["K"]):
            if config != found:
                out.append(("a decode sweep's CUPTI-checked config", [f"{k}={v}" for k, v in config.items()]))
    for listed in filter(None, os.environ.get("CONFIGS", "").split(";")):
        out.append(("a config named in $CONFIGS", listed.split(",")))
    return out


if __name__ == "__main__":
    sys.exit(main())
