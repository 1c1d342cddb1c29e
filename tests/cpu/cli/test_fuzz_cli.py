"""Generated bad values and files through the CLI's verbs (in this process, a fresh store each example): numbers at
the edges, NaN and infinities, huge values, binary data, unicode, missing files. Whatever comes in, the exit code
is 0, 1 or 2, no traceback is printed, the store still opens with its run intact, and no run is left ``running``.

Examples and time are bounded: each test's timeout is its share of 180 s, so the file passes within 3 minutes or
fails by name (30 to 50 s here, on two busy cores). Most tunes are given an unknown dtype as well, so they parse
everything generated and stop before a worker starts; ``test_tune_values_reach_the_worker`` gives the spec's dtype
and one evaluation, so what parses goes on into a worker: a size into the spec's inputs and the kernel, a seed into
the gate, a target into the search, a device name to the backend."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kerntune.store import Store
from tests.conftest import EXAMPLES, FAST_ENV, ROOT
from tests.helpers.cli_inprocess import RUN_ID, Outcome, call, statuses, stored_run

VECTOR_ADD = str(EXAMPLES / "opencl_vector_add")
EDGE_NUMBERS = ["nan", "NaN", "inf", "-inf", "1e999", "-1e999", "9" * 400, "-" + "9" * 40, "0", "-0", "-1", "1e-320"]
EDGE_NUMBERS += ["4096.0", "4096.5", "0x10", "1_000", "١٢٣", "", " ", "2**64", str(2**63), str(-(2**63) - 1)]

numbers = st.one_of(
    st.sampled_from(EDGE_NUMBERS),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
words = st.one_of(
    numbers,
    st.text(max_size=40),
    st.text(alphabet=st.sampled_from("%_*?[]\\'\"=,:@/ \t\n\u200b\u00e9\U0001f600\udcff"), max_size=20),
    st.just("x" * 60_000),
)
contents = st.one_of(
    st.binary(max_size=512),
    st.text(max_size=200).map(str.encode),
    st.sampled_from(
        [
            b'{"op": "vector_add", "shape": {"N": Infinity}, "dtype": "float32", "calls": 1}',
            b'{"op": "vector_add", "shape": {"N": NaN}, "calls": 1e999}',
            b'{"schema": 1, "entries": {"k": {"key": 5}}}',
            b'{"schema": 1e999, "device": [], "entries": []}',
            b'{"device_name": "d", "kernel_name": "k", "problem_size": [4], "tune_params_keys": ["a"], "cache": []}',
            b'{"device_name": "d", "kernel_name": "k", "problem_size": 1e999, "tune_params_keys": [], "cache": {}}',
            b'{"device_name": "d", "kernel_name": "k", "problem_size": [4], "tune_params_keys": ["a"], '
            b'"cache": {"1": {"a": 1, "time": 1e999, "times": [1e999]}}}',
            b"\xff\xfe\x00\x00",
            b"",
        ]
    ),
)
sizes = st.one_of(
    st.sampled_from(EDGE_NUMBERS),
    st.integers(min_value=0, max_value=4096).map(str),
    st.integers(min_value=-(2**80), max_value=-1).map(str),
    st.integers(min_value=2**31, max_value=2**80).map(str),
    st.floats(min_value=-4096, max_value=4096).map(repr),
)
"""Numbers for a tune that reaches its worker: bad, small, negative, or past the kernel's int32; never a valid
size large enough to make one tune slow."""
FUZZ = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, database=None
)
QUICK_TUNE = {
    **FAST_ENV,
    "KERNTUNE_FINALISTS": "0",
    "KERNTUNE_REGIME": "warm",
    "KERNTUNE_SETUP_TIMEOUT_S": "20",
    "KERNTUNE_CANDIDATE_TIMEOUT_S": "20",
}
"""A tune that reaches its worker ends in seconds: the search only (no confirmation rounds), warm timing, and a
worker that hangs is stopped by kerntune's own timeouts, well inside the test's."""


@contextmanager
def fresh_store(env: dict[str, str] | None = None) -> Iterator[Path]:
    """A folder holding a store with one finished run, the working folder while inside (report writes there), with
    ``env`` set in this process's environment (and so in the workers') until the end."""
    folder = Path(tempfile.mkdtemp(prefix="kerntune-fuzz-"))
    setting = {**(env or {}), "KERNTUNE_HOME": str(folder / "store")}
    here, was = os.getcwd(), {name: os.environ.get(name) for name in setting}
    os.environ.update(setting)
    os.chdir(folder)
    try:
        stored_run(folder / "store")
        yield folder
    finally:
        os.chdir(here)
        for name, value in was.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


def survived(result: Outcome, folder: Path, args: list[str]) -> None:
    shown = [a if len(a) < 80 else f"{a[:40]}...({len(a)} chars)" for a in args]
    assert result.code in (0, 1, 2), (shown, result.code, result.stderr[-3000:])
    assert "Traceback" not in result.stderr, (shown, result.stderr[-3000:])
    if result.code == 2:
        assert result.stderr.strip(), (shown, "exit 2 without a word")
    store = Store(folder / "store")
    try:
        assert store.get_run(RUN_ID).status == "done", shown
        assert len(store.candidates(RUN_ID)) == 2, shown
    finally:
        store.close()
    assert "running" not in statuses(folder / "store"), shown


def _with_file(folder: Path, data: bytes | None) -> str:
    """A file holding ``data``, or the path of one that does not exist (None)."""
    path = folder / "input.json"
    if data is not None:
        path.write_bytes(data)
    return str(path)


TUNE_OPTIONS = ["--shape", "--target-ms", "--budget", "--seed", "--top", "--strategy", "--workers", "--device"]


@pytest.mark.timeout(30)
@FUZZ
@given(option=st.sampled_from(TUNE_OPTIONS), value=words, field=st.sampled_from(["N", "M", "N=1,N"]))
def test_tune_options(option: str, value: str, field: str) -> None:
    with fresh_store() as folder:
        given_value = f"{field}={value}" if option == "--shape" else value
        args = ["tune", VECTOR_ADD, option, given_value, "--dtype", "no-such-dtype"]
        survived(call(args), folder, args)


@pytest.mark.timeout(25)
@FUZZ
@given(data=st.one_of(st.none(), contents), top=numbers)
def test_tune_shapes_from(data: bytes | None, top: str) -> None:
    with fresh_store() as folder:
        args = ["tune", VECTOR_ADD, "--shapes-from", _with_file(folder, data), "--top", top, "--dtype", "no-dtype"]
        survived(call(args), folder, args)


DEEP_OPTIONS = ["--shape", "--seed", "--target-ms", "--device"]
"""Options whose values matter past parsing (--workers is left out: a valid count starts that many workers)."""


@pytest.mark.timeout(50)
@settings(FUZZ, max_examples=15)
@given(option=st.sampled_from(DEEP_OPTIONS), number=sizes, value=words)
@example(option="--shape", number="-1", value="")  # the spec's make_inputs refuses it, after the run is created
@example(option="--shape", number=str(2**40), value="")  # past the kernel's int32
@example(option="--shape", number="0", value="")  # nothing to compute, gate or time
def test_tune_values_reach_the_worker(option: str, number: str, value: str) -> None:
    """The spec's dtype and one evaluation: a value that parses is tuned with (a size, seed or target from
    ``sizes``, a device name from ``words``)."""
    pytest.importorskip("pyopencl")
    with fresh_store(QUICK_TUNE) as folder:
        given_value = {"--shape": f"N={number}", "--device": value}.get(option, number)
        small = [] if option == "--shape" else ["--shape", "N=4096"]
        args = ["tune", VECTOR_ADD, option, given_value, *small, "--dtype", "float32", "--budget", "1"]
        survived(call(args), folder, args)


READ_VERBS = [
    ["show", "{ref}"],
    ["show", "{ref}", "--json"],
    ["report", "{ref}"],
    ["deploy", "{ref}", "--table", "{file}"],
    ["floor", "record", "{ref}", "--file", "{file}"],
    ["floor", "check", "{ref}", "--file", "{file}", "--band", "{number}", "--fast-band", "{number}"],
    ["export-kt", "{ref}", "-o", "{file}"],
    ["runs", "--limit", "{number}"],
    ["ledger", "--limit", "{number}", "--kind", "{ref}"],
    ["ledger", "--problem", "{ref}", "--json"],
    ["tune", "--resume", "{ref}"],
]


@pytest.mark.timeout(20)
@FUZZ
@given(verb=st.sampled_from(READ_VERBS), ref=words, number=numbers, data=st.one_of(st.none(), contents))
def test_read_verbs(verb: list[str], ref: str, number: str, data: bytes | None) -> None:
    with fresh_store() as folder:
        file = _with_file(folder, data)
        args = [a.format(ref=ref, number=number, file=file) for a in verb]
        survived(call(args), folder, args)


@pytest.mark.timeout(10)
@FUZZ
@given(
    verb=st.sampled_from(["migrate", "import-kt"]),
    data=st.one_of(st.none(), contents),
    to=words,
    number=numbers,
)
def test_file_verbs(verb: str, data: bytes | None, to: str, number: str) -> None:
    with fresh_store() as folder:
        file = _with_file(folder, data)
        args = (
            ["migrate", file, "--to", to, "--compute-units", number]
            if verb == "migrate"
            else ["import-kt", file, "--shape", to]
        )
        survived(call(args), folder, args)


AB_OPTIONS = ["--seed", "--processes", "--shape", "--scheme", "--expect", "--metric", "--reference", "--spec"]


@pytest.mark.timeout(15)
@FUZZ
@given(option=st.sampled_from(AB_OPTIONS), value=words)
def test_ab_options(option: str, value: str) -> None:
    with fresh_store() as folder:
        args = ["ab", str(folder / "no-spec-a"), str(folder / "no-spec-b"), option, value]
        survived(call(args), folder, args)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "args",
    [
        ["tune", VECTOR_ADD, "--shape", "N=nan", "--budget", "9" * 400],
        ["show", "x" * 60_000],
        ["runs", "--limit", "9" * 40],
    ],
)
def test_the_console_entry_gives_the_same_one_line(args: list[str]) -> None:
    """As a user runs it: a fresh interpreter, ``python -m kerntune``."""
    with fresh_store() as folder:
        env = {**os.environ, "KERNTUNE_HOME": str(folder / "store"), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        proc = subprocess.run(
            [sys.executable, "-m", "kerntune", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
        )
        result = Outcome(proc.returncode, proc.stdout, proc.stderr)
        assert result.code == 2 and len(result.error_lines()) == 1, result.stderr[-2000:]
        survived(result, folder, args)


def test_the_timeouts_share_three_minutes() -> None:
    """Every other test here has a timeout, and together (each parametrized case counted) they are at most 180 s:
    the file passes within 3 minutes in CI or a test fails by name."""
    shares: dict[str, int] = {}
    for name, test in globals().items():
        if name.startswith("test_") and test is not test_the_timeouts_share_three_minutes:
            marks = getattr(test, "pytestmark", [])
            timeout = next((m.args[0] for m in marks if m.name == "timeout"), None)
            assert timeout is not None, f"{name} has no timeout"
            shares[name] = timeout * math.prod(len(m.args[1]) for m in marks if m.name == "parametrize")
    assert sum(shares.values()) <= 180, shares
