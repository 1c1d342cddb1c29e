"""``kerntune run`` and ``serve()`` trust nothing in a table, on the CPU (Triton's interpreter): an entry whose
config breaks its spec's constraints at its shape is never served, counted and named; a spec path written in a
table is never imported; every malformed table gives one warning and the library's results."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KERNELS, CliResult, has_gpu
from tests.cpu.runtime.test_serve import PLAIN, SPEC, _served

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(has_gpu(), reason="serves the CPU dispatch key under the interpreter")

MARKER_SPEC = """
from pathlib import Path
Path({marker!r}).write_text("imported")
"""


def _keyed(*configs: tuple[dict[str, Any], dict[str, Any]], spec: str = str(SPEC)) -> dict[str, Any]:
    """A table of the app's keys, keyed as deploy keys the triton_matmul spec on the CPU."""
    from kerntune.runtime.keys import problem_source_hash
    from kerntune.runtime.serving import cpu_device_fields, load_served_spec

    problem = load_served_spec(SPEC)
    fixed = {"op": problem.name, "source": problem_source_hash(problem), "dtype": "float16", **cpu_device_fields()}
    return {
        "schema": 1,
        "validators": {},
        "entries": [
            {"key": {**fixed, **shape}, "config": config, "status": "measured", "spec": spec}
            for shape, config in configs
        ],
    }


BIAS = {"M": 32, "N": 64, "K": 64, "layout": "NT", "bias": 1}
NO_BIAS = {"M": 32, "N": 128, "K": 64, "layout": "NT", "bias": 0}


def test_an_entry_that_breaks_its_constraints_is_never_served(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    table = tmp_path / "t.json"
    # BLOCK_K=128 at K=64, and SPLIT_K=4 of BLOCK_K=32 at K=64: K divisible by SPLIT_K*BLOCK_K breaks for both
    table.write_text(json.dumps(_keyed((BIAS, {**PLAIN, "BLOCK_K": 128}), (NO_BIAS, {**PLAIN, "SPLIT_K": 4}))))
    done, counts = _served(kerntune, table, tmp_path / "out", "--spec", str(SPEC))
    assert done.code == 0, done.stderr  # the app checked every product in float64: the library ran them
    assert counts["ops"]["aten::addmm"] == {"served": 0, "library": 3, "failed": 0}
    assert counts["ops"]["aten::mm"] == {"served": 0, "library": 15, "failed": 0}
    stats = counts["specs"]["triton_matmul"]
    assert stats["exact"] == 0 and stats["default"] == 9  # counted misses
    rejected = stats["rejected"]
    assert len(rejected) == 2 and all("K divisible by SPLIT_K*BLOCK_K" in why for why in rejected.values())
    assert done.stderr.count("break the spec's space") == 1, done.stderr  # named once, every key in it
    assert all(key in done.stderr for key in rejected)


def test_a_table_that_names_a_spec_path_never_imports_it(kerntune: Callable[..., CliResult], tmp_path: Path) -> None:
    marker = tmp_path / "imported.txt"
    planted = tmp_path / "planted" / "triton_matmul"
    planted.mkdir(parents=True)
    (planted / "spec.py").write_text(MARKER_SPEC.format(marker=str(marker)))
    table = tmp_path / "t.json"
    table.write_text(json.dumps(_keyed((BIAS, PLAIN), spec=str(planted))))
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    done, counts = _served(kerntune, table, tmp_path / "a", "--spec-dir", str(allowed))
    assert done.code == 0, done.stderr
    assert not marker.exists()  # neither the path in the table nor its folder's name outside the allowed folder
    assert counts["unresolved_specs"] and done.stderr.count("never imported") == 1, done.stderr

    from kerntune.runtime.serving import serve

    serving = serve(table, backend="CPU")  # in a program: no spec given, none imported
    try:
        assert not marker.exists() and not serving.specs and serving.unresolved
    finally:
        serving.close()

    done, counts = _served(kerntune, table, tmp_path / "b", "--spec-dir", str(KERNELS))  # an allowed folder: served
    assert done.code == 0, done.stderr
    assert counts["ops"]["aten::addmm"]["served"] == 3 and not marker.exists()


MALFORMED: list[tuple[str, bytes]] = [
    ("binary bytes", bytes(range(256)) * 8),
    ("entries an int", b'{"schema": 1, "entries": 3}'),
    ("validators a list", b'{"schema": 1, "entries": [], "validators": ["torch"]}'),
    ("device a string", b'{"schema": 1, "entries": [], "device": "cpu"}'),
    ("rules an int", b'{"schema": 1, "entries": [], "rules": 4}'),
    ("deep nesting", b'{"schema": 1, "entries": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ("invalid JSON", b'{"schema": 1, "entries": [{"key": {'),
    ("a config value a list", b'{"schema": 1, "entries": [{"key": {"M": 32}, "config": {"BLOCK_M": [32]}}]}'),
]


def test_every_malformed_table_gives_one_warning_and_library_results_in_serve(tmp_path: Path) -> None:
    import torch

    from kerntune.runtime.serving import serve

    x, w = torch.randn(32, 64).half(), torch.randn(64, 64).half()
    want = (x.double() @ w.double()).half()
    for what, data in MALFORMED:
        table = tmp_path / f"{what.replace(' ', '_')}.json"
        table.write_bytes(data)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            serving = serve(table, backend="CPU", specs=[SPEC])
        try:
            assert len(seen) == 1 and "the library runs every call" in str(seen[0].message), (what, seen)
            got = torch.mm(x, w)
            assert serving.counts["aten::mm"] == {"served": 0, "library": 1, "failed": 0}, what
            assert torch.allclose(got.double(), want.double(), rtol=1e-2, atol=1e-2), what
        finally:
            serving.close()


@pytest.mark.parametrize("what", ["binary bytes", "deep nesting"])
def test_a_malformed_table_gives_one_warning_in_kerntune_run(
    kerntune: Callable[..., CliResult], tmp_path: Path, what: str
) -> None:
    table = tmp_path / "t.json"
    table.write_bytes(dict(MALFORMED)[what])
    done, counts = _served(kerntune, table, tmp_path / "out", "--spec", str(SPEC))
    assert done.code == 0, done.stderr  # the library's results passed the app's float64 checks
    assert done.stderr.count("RuntimeWarning") == 1 and "the library runs every call" in done.stderr, done.stderr
    assert counts["disabled"] and counts["ops"]["aten::mm"]["served"] == 0


WRONG_SPEC = """
import dataclasses, importlib.util
found = importlib.util.spec_from_file_location("matmul_spec", {spec!r})
module = importlib.util.module_from_spec(found)
found.loader.exec_module(module)
def wrong(op, shape, config, args, kwargs):
    return module.problem.serve.run(op, shape, config, args, kwargs).mul_(1.5)  # a kernel that computes wrongly
serve = dataclasses.replace(module.problem.serve, run=wrong, prepare=None)
problem = dataclasses.replace(module.problem, serve=serve)
"""


def test_the_first_call_check_sends_a_wrong_key_to_the_library(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    spec = tmp_path / "wrong_spec.py"  # the same spec (name and kernel source) whose outputs are 1.5 times too big
    spec.write_text(WRONG_SPEC.format(spec=str(SPEC / "spec.py")))
    table = tmp_path / "t.json"
    table.write_text(json.dumps(_keyed((BIAS, PLAIN), (NO_BIAS, {**PLAIN, "SPLIT_K": 2, "BLOCK_N": 128}))))
    done, counts = _served(
        kerntune, table, tmp_path / "out", "--spec", str(spec), env={"KERNTUNE_FIRST_CALL_CHECK": "1"}
    )
    assert done.code == 0, done.stderr  # every product right: the library's output replaced the wrong ones
    assert counts["ops"]["aten::addmm"] == {"served": 0, "library": 2, "failed": 1}
    assert counts["ops"]["aten::mm"]["failed"] == 1 and counts["ops"]["aten::mm"]["served"] == 0
    assert done.stderr.count("failed the first-call check") == 2, done.stderr

    check = {"KERNTUNE_FIRST_CALL_CHECK": "1"}
    checked, counts = _served(kerntune, table, tmp_path / "ok", "--spec", str(SPEC), env=check)  # the right kernel
    assert checked.code == 0 and counts["ops"]["aten::addmm"] == {"served": 3, "library": 0, "failed": 0}
    assert counts["ops"]["aten::mm"]["served"] == 3 and "first-call" not in checked.stderr
