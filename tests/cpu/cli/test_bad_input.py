"""Bad input: one line naming the problem and what to do, exit code 2, no traceback."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import EXAMPLES, SPECS, CliResult

CASES = {
    "syntax error": (["tune", str(SPECS / "bad_syntax")], "syntax error"),
    "empty space": (["tune", str(SPECS / "empty_space")], "the space is empty"),
    "constraints exclude all": (["tune", str(SPECS / "excluding")], "exclude every one"),
    "unknown shape field": (["tune", str(EXAMPLES / "opencl_matmul"), "--shape", "Q=3"], "unknown shape field 'Q'"),
    "missing spec path": (["tune", "no/such/spec"], "does not exist"),
    "spec code raises": (["tune", str(SPECS / "spec_error")], "reference raised KeyError"),
    "cost model raises": (["tune", str(SPECS / "cost_error")], "the spec's cost raised KeyError"),
    "all-zero inputs": (["tune", str(SPECS / "zero_inputs")], "all-zero input 'a'"),
    "inputs ignore the seed": (["tune", str(SPECS / "seedless")], "same inputs for seeds"),
    "bad budget": (["tune", str(EXAMPLES / "opencl_matmul"), "--budget", "soon"], "--budget"),
    "unknown strategy": (["tune", str(EXAMPLES / "opencl_matmul"), "--strategy", "magic"], "unknown strategy"),
    "unknown dtype": (["tune", str(EXAMPLES / "opencl_matmul"), "--dtype", "int4"], "dtype 'int4'"),
    "unknown run": (["show", "nope"], "no tuning run 'nope'"),
    "space too large to enumerate": (["tune", str(SPECS / "huge_space")], "spec huge_space: the space has"),
    "constraint raises": (
        ["tune", str(SPECS / "constraint_raises")],
        "spec constraint_raises: the constraint 'tile divides' raised ZeroDivisionError",
    ),
    "make_inputs returns a list": (["tune", str(SPECS / "inputs_list")], "make_inputs returned a list, not a dict"),
    "spec exits on import": (["tune", str(SPECS / "exits_on_import")], "the spec called sys.exit(7) while loading"),
}
NEEDS_OPENCL = ("spec code raises", "all-zero inputs", "inputs ignore the seed", "space too large to enumerate")
NEEDS_OPENCL += ("constraint raises", "make_inputs returns a list")


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_and_exit_2(name: str, kerntune: Callable[..., CliResult]) -> None:
    if name in NEEDS_OPENCL:
        pytest.importorskip("pyopencl")
    args, expected = CASES[name]
    result = kerntune(*args)
    assert result.code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("kerntune: error:")]
    assert len(lines) == 1 and expected in lines[0], result.stderr
