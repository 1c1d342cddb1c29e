"""`kerntune deploy` on a PoCL run: the JSON the runtime reads, the Python module and the C header (compiled
with gcc and looked up with bsearch), merging, and refusing to overwrite a table it cannot read."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from kerntune.runtime.dispatch import Dispatcher
from kerntune.runtime.table import entry_key
from kerntune.settings import Settings
from tests.conftest import EXAMPLES, CliResult

pytest.importorskip("pyopencl")

LOOKUP_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "table.inc"
static int by_key(const void *k, const void *e) {
    return strcmp((const char *)k, ((const struct kerntune_entry *)e)->key);
}
int main(int argc, char **argv) {
    const struct kerntune_entry *hit = bsearch(argv[1], KERNTUNE_ENTRIES, KERNTUNE_ENTRY_COUNT,
                                               sizeof KERNTUNE_ENTRIES[0], by_key);
    printf("%s\n", hit ? hit->config : "(miss)");
    return hit ? 0 : 1;
}
"""


def _tune(kerntune: Callable[..., CliResult], *shapes: str) -> None:
    args = [a for s in shapes for a in ("--shape", s)]
    result = kerntune(
        "tune", str(EXAMPLES / "opencl_vector_add"), *args, "--budget", "3", env={"KERNTUNE_CONFIRM_ROUNDS": "0"}
    )
    assert result.code == 0, result.stderr


def test_deploy_writes_three_artifacts_the_runtime_python_and_c_read(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    _tune(kerntune, "N=65536", "N=262144")
    path = tmp_path / "tables" / "table.json"
    done = kerntune("deploy", "last", "--table", str(path), "--json")
    assert done.code == 0, done.stderr
    table = json.loads(path.read_text())
    assert table["schema"] == 1 and table["provenance"]["run"] and len(table["entries"]) == 2
    assert {"kerntune", "opencl", "driver"} <= set(table["validators"])
    entry = next(e for e in table["entries"] if e["key"]["N"] == 65536)
    assert entry["status"] == "measured" and entry["key"]["op"] == "opencl_vector_add"

    spec = importlib.util.spec_from_file_location("deployed_table", path.with_suffix(".py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert table == module.TABLE

    if shutil.which("gcc") is None:
        pytest.skip("no gcc on this machine")
    (tmp_path / "tables" / "lookup.c").write_text(LOOKUP_C)
    exe = tmp_path / "lookup"
    subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Werror", "-o", str(exe), str(tmp_path / "tables" / "lookup.c")],
        check=True,
        cwd=tmp_path / "tables",
    )
    found = subprocess.run([str(exe), entry_key(entry["key"])], capture_output=True, text=True)
    assert found.returncode == 0
    assert found.stdout.strip() == ",".join(f"{k}={v}" for k, v in sorted(entry["config"].items()))
    assert subprocess.run([str(exe), "op=nothing"], capture_output=True).returncode == 1

    device = {k: v for k, v in entry["key"].items() if k in ("arch", "compute_units", "device_name")}
    fixed = {k: v for k, v in entry["key"].items() if k not in device and k != "N"}
    live = Dispatcher(
        path,
        key=lambda n: {**fixed, "N": n},
        default={"BLOCK": 1},
        device=device,
        versions=table["validators"],
        settings=Settings(),
    )
    assert live.select(65536) == entry["config"] and live.select(4096) == {"BLOCK": 1}
    assert live.stats()["exact"] == 1 and live.stats()["default"] == 1


def test_deploy_merges_and_refuses_to_overwrite_an_unreadable_table(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = tmp_path / "table.json"
    _tune(kerntune, "N=65536")
    assert kerntune("deploy", "last", "--table", str(path)).code == 0
    _tune(kerntune, "N=131072")
    assert kerntune("deploy", "last", "--table", str(path)).code == 0
    assert sorted(e["key"]["N"] for e in json.loads(path.read_text())["entries"]) == [65536, 131072]
    path.write_text(path.read_text()[:-40])  # truncated by hand
    refused = kerntune("deploy", "last", "--table", str(path))
    assert refused.code == 2 and "will not overwrite it" in refused.stderr
    wrong = kerntune("deploy", "last", "--table", str(tmp_path / "table.yaml"))
    assert wrong.code == 2 and "*.json" in wrong.stderr


def test_migrate_lists_every_entry_to_tune_again_on_another_device(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    _tune(kerntune, "N=65536", "N=131072")
    path = tmp_path / "table.json"
    assert kerntune("deploy", "last", "--table", str(path)).code == 0
    table = json.loads(path.read_text())
    arch = table["device"]["arch"]
    moved = kerntune("migrate", str(path), "--to", "sm_100", "--compute-units", "148", "--json")
    assert moved.code == 0, moved.stderr
    data = moved.json()
    assert sorted(r["shape"]["N"] for r in data["retune"]) == [65536, 131072] and data["still_valid"] == 0
    assert data["retune"][0]["because"]["arch"] == {"table": arch, "target": "sm_100"}
    assert data["commands"] == [
        f"kerntune tune SPEC_OF_opencl_vector_add --shape N={n1} --shape N={n2}"
        for n1, n2 in [sorted(r["shape"]["N"] for r in data["retune"])]
    ]
    same = kerntune("migrate", str(path), "--to", arch, "--json").json()
    assert same["retune"] == [] and same["still_valid"] == 2
    path.write_text("{")
    broken = kerntune("migrate", str(path), "--to", "sm_100")
    assert broken.code == 2 and "not valid JSON" in broken.stderr
