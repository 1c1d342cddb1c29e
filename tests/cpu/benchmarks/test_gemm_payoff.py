"""The GEMM payoff suite (benchmarks/gemm-payoff) without a GPU: its shapes file read by the project's parser
into 33 distinct keys in three groups, its training group equal to the analytic derivation and the derivation
equal to what a CPU run of the training step calls under `kerntune scope`; the training step itself; the
side-by-side's refusals, its served call (the table's kernel under Triton's interpreter, the library where the
table leaves a key), its A B B A rotation, its acceptance lines and the merge of its parts; the deploy step's merge
of tables kept from runs another machine tuned; the runner listing the suite."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KERNELS, ROOT, CliResult, benchmark_script, has_gpu, load_benchmark

pytest.importorskip("torch")
payoff = load_benchmark("payoff_shapes")

SHAPES = ROOT / "benchmarks" / "specs" / "gemm_payoff_shapes.txt"
TINY = {"hidden": 64, "intermediate": 96, "heads": 4, "kv_heads": 2, "vocab": 160, "layers": 2}
"""A training step small enough for the CPU, every layer kind a different size (so every key is distinct)."""


def _tiny_args(steps: int) -> list[str]:
    args = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()]
    return [*args, "--seq=16", "--batch=2", f"--steps={steps}", "--warmup=1", "--device=cpu"]


def test_the_shapes_file_holds_33_distinct_keys_in_three_groups() -> None:
    from kerntune.cli.common import parse_shape
    from kerntune.tune.inputs import resolve_shapes
    from kerntune.tune.spec import load_spec

    shapes = payoff.read_payoff_shapes(SHAPES)
    groups = [s.group for s in shapes]
    assert {g: groups.count(g) for g in payoff.GROUPS} == {"suite": 20, "training": 8, "decode-odd-n": 5}
    suite = [line for line in (ROOT / "benchmarks/specs/llm_gemm_shapes.txt").read_text().splitlines()]
    assert [s.text for s in shapes if s.group == "suite"] == [x for x in suite if x and not x.startswith("#")]
    # Each line as `kerntune tune --shape` reads it, at the spec's own shape fields: 33 distinct keys.
    problem = load_spec(KERNELS / "triton_gemm").problem
    keys = {s.key for s in resolve_shapes(problem, [parse_shape(item.text) for item in shapes])}
    assert len(keys) == len(shapes) == 33
    for item in shapes:
        if item.group == "decode-odd-n":  # no 16-byte row pitch, as an nn.Linear head calls it
            assert item.shape["N"] % 8 and item.shape["layout"] == "NT" and item.shape["M"] <= 16
    # The training group is the derivation's eight hottest keys, in its order.
    derived = [g.shape for g in payoff.training_gemms()[:8]]
    assert [s.shape for s in shapes if s.group == "training"] == derived


def test_a_bad_shapes_file_is_refused_in_one_line(tmp_path: Path) -> None:
    cases = {
        "M=1,N=x,K=3,layout=NT": "not a whole number",
        "M=1,N=2,K=3,layout=XY": "layout is one of",
        "M=1,N=2,K=3,layout=NT\nM=1,N=2,K=3,layout=NT": "given twice",
    }
    for body, said in cases.items():
        path = tmp_path / "shapes.txt"
        path.write_text(f"# group: suite\n{body}\n")
        done = subprocess.run(
            [sys.executable, str(benchmark_script("payoff_shapes")), "args", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, body
    (tmp_path / "nogroup.txt").write_text("M=1,N=2,K=3\n")
    with pytest.raises(ValueError, match="before the first '# group"):
        payoff.read_payoff_shapes(tmp_path / "nogroup.txt")


def test_a_group_of_the_file_is_tuned_alone() -> None:
    def args(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(benchmark_script("payoff_shapes")), "args", str(SHAPES), *extra],
            capture_output=True,
            text=True,
            timeout=120,
        )

    training = args("--group", "training")
    assert training.returncode == 0, training.stderr
    shapes = training.stdout.split()[1::2]
    assert len(shapes) == 8 and "M=32000,N=2048,K=2048,layout=TN" in shapes
    assert args("--group", "training", "--part", "2/2").stdout.split()[1::2] == shapes[4:]
    bad = args("--group", "prefill")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "prefill" in bad.stderr


def test_parts_cover_every_shape_once_and_a_spec_keeps_what_its_constraints_admit() -> None:
    shapes = payoff.read_payoff_shapes(SHAPES)
    parts = [payoff.part_of(shapes, f"{i}/4") for i in range(1, 5)]
    assert [s for part in parts for s in part] == shapes and all(8 <= len(p) <= 9 for p in parts)
    for bad in ("0/4", "5/4", "1", "a/b"):
        with pytest.raises(ValueError, match="give I/N"):
            payoff.part_of(shapes, bad)
    kept, left = payoff.admitted(KERNELS / "gluon_gemm", shapes)
    assert len(kept) == 28 and len(left) == 5 and all("TMA" in why for why in left.values())
    assert all(s.group != "decode-odd-n" for s in kept)


def test_the_training_step_runs_two_steps_on_the_cpu_and_prints_a_number_last(tmp_path: Path) -> None:
    losses = tmp_path / "losses.json"
    done = subprocess.run(
        [sys.executable, str(benchmark_script("train_step")), *_tiny_args(2), "--losses", str(losses)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"[0-9.]+ ms per training step", last), last
    assert float(last.split()[0]) > 0
    # Every step's loss, the warm-up step first; the last is the one printed.
    written = json.loads(losses.read_text())
    assert len(written) == 3 and all(x > 0 for x in written)
    assert f"loss {written[-1]:.4f} after 3 steps" in done.stdout


def test_scope_of_the_cpu_step_finds_the_derived_gemms_and_check_corpus_reads_it(
    kerntune: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Shapes, layouts and calls a step of every key, as derived (at small sizes: 16 tokens x 2 sequences)."""
    pytest.importorskip("transformers")
    corpus = tmp_path / "train.jsonl"
    steps = 2
    scoped = kerntune(
        "scope", "--region", "step", "--corpus", str(corpus), "--json", "--",
        sys.executable, str(benchmark_script("train_step")), *_tiny_args(steps),
    )  # fmt: skip
    assert scoped.code == 0, scoped.stderr[-2000:]
    from kerntune.runtime.corpus import merge, read_corpus

    found = {
        (line.shape["M"], line.shape["N"], line.shape["K"], line.layout): line.calls
        for line in merge(read_corpus(corpus))
        if line.op == "aten::mm"
    }
    derived = payoff.training_gemms(**TINY, tokens=32)
    assert found == {(g.shape["M"], g.shape["N"], g.shape["K"], g.shape["layout"]): g.calls * steps for g in derived}
    # A shapes file whose training group is the derivation's top 8 matches the corpus; one key off does not.
    lines = [f"M={g.shape['M']},N={g.shape['N']},K={g.shape['K']},layout={g.shape['layout']}" for g in derived]
    shapes = tmp_path / "shapes.txt"
    for body, code in (lines[:8], 0), ([*lines[:7], lines[12]], 1):
        shapes.write_text("# group: training\n" + "\n".join(body) + "\n")
        checked = subprocess.run(
            [sys.executable, str(benchmark_script("payoff_shapes")), "check-corpus", str(shapes), str(corpus)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert checked.returncode == code, checked.stdout + checked.stderr


def _side(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(benchmark_script("side_by_side")), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")},
    )


def _empty_table(path: Path) -> Path:
    path.write_text(json.dumps({"schema": 1, "provenance": {}, "validators": {}, "device": {}, "entries": []}))
    return path


def test_side_by_side_exits_2_with_one_line_on_a_missing_file(tmp_path: Path) -> None:
    out = str(tmp_path / "out.json")
    for args in (
        ["--table", str(tmp_path / "none.json"), "--out", out],
        ["--table", str(_empty_table(tmp_path / "t.json")), "--out", out, "--shapes", str(tmp_path / "none.txt")],
    ):
        done = _side(*args, tmp_path=tmp_path)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "no such file" in done.stderr
    assert not (tmp_path / "out.json").exists()


@pytest.mark.skipif(has_gpu(), reason="a CUDA device is visible: the no-CUDA refusal cannot be reached")
def test_side_by_side_exits_2_with_one_line_without_cuda(tmp_path: Path) -> None:
    done = _side(
        "--table", str(_empty_table(tmp_path / "t.json")), "--out", str(tmp_path / "o.json"), tmp_path=tmp_path
    )
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "side_by_side.py: no CUDA device: the side-by-side times the candidates on one GPU"
    ]


SERVED = r"""
import json, sys
from pathlib import Path
import torch
sys.path.insert(0, sys.argv[2])
import side_by_side as sbs
from kerntune.runtime.keys import problem_source_hash
from kerntune.runtime.serving import cpu_device_fields, load_served_spec

kernels = Path(sys.argv[3])
spec = load_served_spec(kernels / "triton_gemm")
config = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8, "SPLIT_K": 1, "FUSED": 0, "TMA": 0,
          "PERSISTENT": 0, "num_warps": 4, "num_stages": 2}
fixed = {"op": spec.name, "source": problem_source_hash(spec), "dtype": "float16", **cpu_device_fields()}
def entry(m, **more):
    return {"key": {**fixed, "M": m, "N": 32, "K": 64, "layout": "NT", "bias": 0}, "config": config, **more}
table = Path(sys.argv[1])
table.write_text(json.dumps({"schema": 1, "provenance": {}, "validators": {}, "device": {}, "entries": [
    entry(16), entry(32, library_faster={"why": "not faster than torch.matmul"})]}))
served = sbs.open_table(table, [kernels], backend="CPU", device=cpu_device_fields())
found = {}
for m in (16, 32, 48):
    a, w = torch.randn(m, 64, dtype=torch.float16), torch.randn(32, 64, dtype=torch.float16)
    s = sbs.served_call(served, "aten::mm", (a, w.t()), "float16", lambda: torch.mm(a, w.t()))
    out = s.call()
    ref = a.double() @ w.t().double()
    found[m] = {"by": s.by, "counts": dict(s.counts), "why": s.why,
                "error": float((out.double() - ref).norm() / ref.norm())}
torch.mm(torch.randn(16, 64, dtype=torch.float16), torch.randn(32, 64, dtype=torch.float16).t())
found["serve_counts"] = dict(served.serving.counts["aten::mm"])
print(json.dumps(found))
"""


def test_the_tables_call_is_its_served_kernel_and_the_library_where_the_table_leaves_the_key(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    script = benchmark_script("side_by_side")
    done = subprocess.run(
        [sys.executable, "-c", SERVED, str(tmp_path / "t.json"), str(script.parent), str(KERNELS)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TRITON_INTERPRET": "1", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["16"]["by"] == "triton_matmul" and found["16"]["counts"] == {"served": 1, "library": 0, "failed": 0}
    assert found["32"]["by"] == "library" and "deploy left it to the library" in found["32"]["why"]
    assert found["48"]["by"] == "library" and found["48"]["why"] == "the table has no entry for this call"
    assert all(found[m]["error"] < 1e-2 for m in ("16", "32", "48"))
    # serve()'s override is gone: torch.mm at the served key ran the library, not the served kernel
    assert found["serve_counts"] == {"served": 0, "library": 0, "failed": 0}


def test_the_rotation_pairs_every_two_rounds_into_abba_blocks() -> None:
    sbs = load_benchmark("side_by_side")
    names = ["torch.mm", "table", "tunableop", "max-autotune"]
    orders = sbs.rotation(names, 96)
    assert len(orders) == 96 and len(set(orders)) == 24  # every permutation, each four times
    for j in range(0, 96, 2):
        assert orders[j + 1] == orders[j][::-1]
        for x in names[1:]:  # the library and each rival: once in each order within the block
            firsts = [order.index("torch.mm") < order.index(x) for order in orders[j : j + 2]]
            assert sorted(firsts) == [False, True]


def _row(index: int, group: str, table: float, tunable: float, cupti_shift: float = 1.0) -> dict[str, Any]:
    def speed(value: float) -> dict[str, Any]:
        return {"speed": value, "ci": [value * 0.99, value * 1.01]}

    return {
        "index": index,
        "group": group,
        "key": f"M={index},N=8,K=8,layout=NT",
        "failed": {},
        "gated": {"torch.mm": True, "table": True, "tunableop": True, "max-autotune": True},
        "speed": {
            "table": {"events": speed(table), "cupti": speed(table * cupti_shift), "agree": cupti_shift == 1.0},
            "tunableop": {"events": speed(tunable), "cupti": speed(tunable), "agree": True},
            "max-autotune": {"events": speed(1.0), "cupti": speed(1.0), "agree": True},
        },
    }


def test_the_acceptance_is_met_only_over_every_shape_by_both_timers() -> None:
    sbs = load_benchmark("side_by_side")
    rows = [_row(0, "suite", 1.10, 1.0), _row(1, "training", 1.06, 1.0), _row(2, "decode-odd-n", 1.0, 1.0)]
    summary = sbs.summarize(rows, 3)
    assert [line["met"] for line in summary["acceptance"]] == [True, True, True]
    assert summary["geomean"]["cupti"]["training"]["table"] == {"speed": pytest.approx(1.06), "shapes": 1}
    assert summary["lowest_table"]["events"] == (1.0, "M=2,N=8,K=8,layout=NT")
    assert [line["met"] for line in sbs.summarize(rows, 4)["acceptance"]] == [False, False, False]  # a shape missing
    slow = [_row(0, "suite", 1.12, 1.0), rows[1], _row(2, "decode-odd-n", 0.985, 1.0)]  # geomean 1.0535, one < 0.99
    assert [line["met"] for line in sbs.summarize(slow, 3)["acceptance"]] == [True, False, True]
    behind = [_row(i, "suite", 1.05, 1.06) for i in range(3)]  # at 1.05, but behind TunableOp
    assert [line["met"] for line in sbs.summarize(behind, 3)["acceptance"]] == [True, True, False]
    split = [_row(0, "suite", 1.06, 1.0, cupti_shift=0.98), *rows[1:]]  # the profiler puts it at 1.0388
    first = sbs.summarize(split, 3)["acceptance"][0]
    assert not first["met"] and "not by CUPTI" in first["why"]
    wrong = [dict(rows[0], gated={**rows[0]["gated"], "table": False}), *rows[1:]]
    assert not any(line["met"] for line in sbs.summarize(wrong, 3)["acceptance"])
    assert sbs.summarize(split, 3)["timers_agree"]["disagree"] == ["M=0,N=8,K=8,layout=NT table"]


def test_parts_merge_into_one_run_of_one_table(tmp_path: Path) -> None:
    sbs = load_benchmark("side_by_side")
    head = {"shapes_sha256": "s", "table_sha256": "t", "shapes_total": 3}
    parts = {
        "a": {
            **head,
            "finished": "2026-01-01T00:00:01Z",
            "rows": [_row(0, "suite", 0.9, 1.0), _row(1, "suite", 1.1, 1)],
        },
        "b": {**head, "finished": "2026-01-01T00:00:02Z", "rows": [_row(0, "suite", 1.2, 1.0)]},
        "c": {**head, "table_sha256": "other", "finished": "2026-01-01T00:00:00Z", "rows": [_row(2, "suite", 2.0, 1)]},
    }
    for name, doc in parts.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    merged = sbs.merge_parts([tmp_path / f"{n}.json" for n in ("b", "a", "c")])
    assert [r["speed"]["table"]["events"]["speed"] for r in merged["rows"]] == [1.2, 1.1]  # the later part's row
    assert merged["left_out"] == [f"{tmp_path / 'c.json'} (another table, shapes file or device)"]
    assert merged["summary"]["shapes_timed"] == 2 and not merged["summary"]["acceptance"][0]["met"]


def _run_table(spec: str, ratio: float) -> dict[str, Any]:
    """A table as `kerntune deploy` writes one run's: one H100 entry of ``spec`` at one key."""
    device = {"arch": "sm_90", "compute_units": 132, "device_name": "NVIDIA H100 80GB HBM3"}
    key = {"op": spec, "source": spec[:4], "dtype": "bfloat16", "M": 16, "N": 4096, "K": 4096, "layout": "NT"}
    return {
        "schema": 1,
        "provenance": {"run": spec},
        "validators": {"torch": "2.11.0", "kerntune": "0.1.0"},
        "device": {"vendor": "nvidia", **device},
        "entries": [{"key": {**key, "bias": 0, **device}, "config": {"X": 1}, "library_ratio": ratio}],
    }


def test_the_deploy_step_merges_the_kept_tables_of_runs_tuned_elsewhere(tmp_path: Path) -> None:
    data, scratch = tmp_path / "data", tmp_path / "scratch"
    tune = data / "tune"
    tune.mkdir(parents=True)
    for n, (spec, ratio) in enumerate((("triton_matmul", 0.97), ("gluon_gemm", 0.95))):
        tag = f"{spec}-part1of1"  # reports of runs this store never saw: `kerntune deploy` refuses them
        (tune / f"{tag}.json").write_text(json.dumps({"run": {"id": f"20260101-00000{n}-abcd"}, "shapes": []}))
        (tune / f"{tag}.table.json").write_text(json.dumps(_run_table(spec, ratio)))
    script = (
        # EARLIER_DATA: the test's data alone, never the tree's benchmarks/data/gemm-payoff/<today> (real runs)
        f"set -u; D={data}; EARLIER_DATA={data}; W={scratch}; LOG={tmp_path}/run.log; mkdir -p $W; exec 3>&1; "
        f"export KERNTUNE_HOME={scratch}/store; . benchmarks/lib.sh; . benchmarks/gemm-payoff/suite.sh; step_deploy"
    )
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"  # the suite's python3: this interpreter
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "PATH": path}
    )
    log = (tmp_path / "run.log").read_text()
    assert done.returncode == 0, done.stdout + log
    assert "2 of 2 runs in" in done.stdout and done.stdout.count("is not in this store") == 2
    assert "no tuning run '20260101-000000-abcd'" in log  # deploy was tried first, and refused for that reason
    table = json.loads((data / "deploy" / "table.json").read_text())
    by_spec = {e["key"]["op"]: e for e in table["entries"]}
    assert set(by_spec) == {"triton_matmul", "gluon_gemm"}
    assert by_spec["triton_matmul"]["outranked"]["by"] == "gluon_gemm"  # the faster spec serves the call
    assert "outranked" not in by_spec["gluon_gemm"]


def test_the_runner_lists_the_suite() -> None:
    listed = subprocess.run(
        [str(ROOT / "benchmarks" / "run"), "--list"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("gemm-payoff "))
    assert "TunableOp" in lines[at] and "steps: scope tune deploy side train; needs: gpu" in lines[at + 1]


def _scope_report(spans: int, gemms: list[tuple[int, int, int, str, float]]) -> dict[str, Any]:
    """A `kerntune scope --region step --json` report's parts train_served.py reads."""
    return {
        "window": {"spans": spans},
        "gemms": [
            {"op": "aten::mm", "shape": {"M": m, "N": n, "K": k}, "layout": layout, "bias": 0, "calls": 3,
             "device_us": us}
            for m, n, k, layout, us in gemms
        ],
    }  # fmt: skip


def _train_served(tmp_path: Path, verify: dict[str, Any], served_losses: list[float]) -> tuple[int, str, str]:
    files = {
        "library": _scope_report(2, [(2048, 5632, 2048, "NT", 2000.0), (2048, 2048, 5632, "NN", 1000.0)]),
        "served": _scope_report(2, [(2048, 5632, 2048, "NT", 1800.0), (2048, 2048, 5632, "NN", 1000.0)]),
        "library-losses": [10.5, 10.4, 10.3],
        "served-losses": served_losses,
        "verify": verify,
    }
    args = []
    for name, body in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(body))
        args += [f"--{name}", str(tmp_path / f"{name}.json")]
    done = subprocess.run(
        [sys.executable, str(benchmark_script("train_served")), *args, "--out", str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


ENGAGED = {
    "entries": [{"key": "a"}, {"key": "b"}],
    "never_engaged": [],
    "serves_nothing": None,
    "hit_rate": 0.5,
    "end_to_end": {"verdict": "noise", "ratio": 0.99, "ci": [0.97, 1.005], "band": 0.01, "pairs": 4, "reason": ""},
}


def test_the_served_training_step_is_judged_on_gemm_time_engagement_losses_and_the_ab(tmp_path: Path) -> None:
    code, out, err = _train_served(tmp_path, ENGAGED, [10.5, 10.401, 10.302])
    assert code == 0, err
    # (2000 + 1000) / 2 spans = 1.5 ms a step on the library, (1800 + 1000) / 2 = 1.4 ms served
    assert "library 1.500 ms, served 1.400 ms" in out
    assert "M=2048,N=5632,K=2048,layout=NT: 1.000 -> 0.900 ms (1.111x)" in out
    assert out.count("ACCEPTANCE") == 4 and "NOT met" not in out
    judged = json.loads((tmp_path / "out.json").read_text())
    assert judged["max_loss_rel"] == pytest.approx(0.002 / 10.3, rel=1e-6)
    # Each line fails on its own: an entry never engaged, a lost A/B, a loss past the gate.
    code, out, _ = _train_served(tmp_path, {**ENGAGED, "never_engaged": ["b"]}, [10.5, 10.4, 10.3])
    assert "ACCEPTANCE every served entry engaged: NOT met" in out and out.count("NOT met") == 1
    lost = {**ENGAGED, "end_to_end": {**ENGAGED["end_to_end"], "verdict": "loss"}}
    code, out, _ = _train_served(tmp_path, lost, [10.5, 10.4, 10.3])
    assert "ACCEPTANCE the end-to-end A/B is not a loss: NOT met" in out and out.count("NOT met") == 1
    # An undecided A/B (noise, but its interval reaching past the band) shows no absence of a loss.
    undecided = {**ENGAGED, "end_to_end": {**ENGAGED["end_to_end"], "ratio": 1.26, "ci": [0.92, 1.73]}}
    code, out, _ = _train_served(tmp_path, undecided, [10.5, 10.4, 10.3])
    assert "ACCEPTANCE the end-to-end A/B is not a loss: NOT met" in out and out.count("NOT met") == 1
    code, out, _ = _train_served(tmp_path, ENGAGED, [10.5, 10.4, 10.5])
    assert "ACCEPTANCE loss within the gate: NOT met" in out and out.count("NOT met") == 1
    nothing = {**ENGAGED, "entries": [], "serves_nothing": "no entry", "end_to_end": None}
    code, out, _ = _train_served(tmp_path, nothing, [10.5, 10.4, 10.3])
    assert code == 0 and "end-to-end A/B: not run" in out
    assert "ACCEPTANCE every served entry engaged: NOT met" in out


def test_the_served_training_step_refuses_unlike_runs_in_one_line(tmp_path: Path) -> None:
    code, _, err = _train_served(tmp_path, ENGAGED, [10.5, 10.4])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "2 losses against the library run's 3" in err
    (tmp_path / "library.json").write_text("{not json")
    done = subprocess.run(
        [sys.executable, str(benchmark_script("train_served")), *[
            a for n in ("library", "served", "library-losses", "served-losses", "verify")
            for a in (f"--{n}", str(tmp_path / f"{n}.json"))]],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "library.json" in done.stderr


def test_side_by_side_refuses_a_group_the_file_lacks_in_one_line(tmp_path: Path) -> None:
    table = _empty_table(tmp_path / "table.json")
    only_training = tmp_path / "shapes.txt"
    only_training.write_text("# group: training\nM=2048,N=5632,K=2048,layout=NT\n")
    for args, said in (
        (["--group", "prefill"], "invalid choice"),
        (["--group", "suite", "--shapes", str(only_training)], "no shape of group 'suite'"),
    ):
        done = _side("--table", str(table), "--out", str(tmp_path / "o.json"), *args, tmp_path=tmp_path)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and said in done.stderr
