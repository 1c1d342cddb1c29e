"""The kernel-forms benchmark's own logic (benchmarks/gemm/gemm_forms.py), without a GPU: which configs it picks at a
shape, how it names their forms, how it summarizes, and how it refuses bad arguments."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KERNELS, ROOT, benchmark_script, load_benchmark

pytest.importorskip("torch")
pytest.importorskip("triton")
gemm_forms = load_benchmark("gemm_forms")


def _problem() -> Any:
    from kerntune.tune.spec import load_spec

    return load_spec(str(KERNELS / "triton_gemm")).problem


def test_the_forms_picked_at_a_shape_are_the_seeds_valid_there_after_the_reports_winners() -> None:
    from kerntune.model import Config, Shape, Target

    h200 = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132)
    problem = _problem()
    prior = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 4}
    for text in ("M=256,N=10240,K=8192,layout=NT", "M=1,N=6144,K=4096,layout=NT"):
        shape = gemm_forms.parse_shape(text)
        picked = gemm_forms.candidates(problem, shape, h200, {"split_k", "tma"}, [("prior", prior), ("later", prior)])
        labels = [label for label, _ in picked]
        assert labels[:2] == ["prior", "later"] and picked[0][1]["SPLIT_K"] == 1  # completed from the spec's default
        assert picked[0][1] == picked[1][1]  # two reports' same winner is timed twice, an A/A of the protocol
        assert set(labels[2:]) <= {"split_k", "tma"} and "tma" in labels  # only the forms asked for
        for label, config in picked[2:]:
            assert gemm_forms.form_of(config) == label
            assert problem.space.check(Config.of(config), Shape.of(shape), h200) is None  # valid at the shape
    assert gemm_forms.form_of({"STREAM_K": 2, "SPLIT_K": 1}) == "stream_k"  # forms the example may grow are named
    assert gemm_forms.form_of({"SPLIT_K": 4, "TMA": 1}) == "tma_split_k"
    assert gemm_forms.form_of({"SPLIT_K": 4, "TMA": 0}) == "split_k"
    assert gemm_forms.form_of({"SPLIT_K": 1, "TMA": 1, "BLOCK_N": 160}) == "tma_wide"
    assert gemm_forms.form_of({"SPLIT_K": 1, "TMA": 0, "BLOCK_N": 96}) == "wide"
    assert gemm_forms.form_of({"SPLIT_K": 1, "TMA": 1, "BLOCK_N": 128}) == "tma"


def test_the_summary_sets_each_forms_best_beside_the_reports_winner() -> None:
    def row(label: str, ratio: float, gated: bool = True) -> dict[str, Any]:
        return {"label": label, "gated": gated, "checked": {"ratio": ratio}}

    done = [
        {"rows": [row("prior", 1.25), row("stream_k", 1.05), row("stream_k", 0.99), row("sk_tail", 2.0, False)]},
        {"rows": [row("prior", 1.0), row("stream_k", 1.1)]},
    ]
    found = gemm_forms.summary(done)
    assert found["geomean_ratio_by_label"]["stream_k"] == pytest.approx((0.99 * 1.1) ** 0.5)
    assert found["shapes_by_label"] == {"prior": 2, "stream_k": 2}  # a config that failed its gate is no best
    assert found["prior_over_best_geomean"] == pytest.approx((1.25 / 0.99 * 1.0) ** 0.5)
    for shape, rows in zip(({"M": 1}, {"M": 2}), done, strict=True):
        rows["shape"] = shape
        for n, each in enumerate(rows["rows"]):
            each["config"] = {"BLOCK_M": n}
    best = gemm_forms.best_report(done)  # each shape's fastest gated config, whatever its label
    assert best == {
        "shapes": [
            {"shape": {"M": 1}, "winner": {"config": {"BLOCK_M": 2}, "label": "stream_k"}},
            {"shape": {"M": 2}, "winner": {"config": {"BLOCK_M": 0}, "label": "prior"}},
        ]
    }


def test_bad_arguments_are_refused_with_one_line_and_exit_2(tmp_path: Path) -> None:
    part = tmp_path / "part.json"
    part.write_text(
        json.dumps(
            {
                "shapes": [
                    {"shape": {"M": 16, "N": 4096, "K": 4096, "layout": "NT"}, "winner": {"config": {"BLOCK_M": 16}}}
                ]
            }
        )
    )
    bad = tmp_path / "shapes.txt"
    bad.write_text("M=16,N=4096\n")
    worse = tmp_path / "worse.txt"
    worse.write_text("M=16,N=4k,K=8\n")
    for args, said in (
        (["--forms", "streamk"], "unknown form 'streamk'"),
        (["--shapes", str(bad)], "M, N and K"),
        (["--spec", str(bad)], "is not LABEL=SPEC.py"),
        (["--spec", f"v={tmp_path}/none.py"], "none.py is not a file"),
        (["--shapes", str(worse)], "N is '4k', not a whole number"),
        (["--report", str(tmp_path / "none.json")], "is not a file"),
        (["--blocks", "1"], "--blocks"),
        (["--report", f"a={part}", "--report", f"a={part}"], "must not share a shape"),
        (["--report", str(bad)], "--report: Expecting value"),
    ):
        done = subprocess.run(
            [sys.executable, str(benchmark_script("gemm_forms")), str(tmp_path / "o.json"), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done
    assert not (tmp_path / "o.json").exists()


def test_a_reports_winners_are_read_by_shape(tmp_path: Path) -> None:
    report = tmp_path / "tune.json"
    report.write_text(
        json.dumps(
            {
                "shapes": [
                    {
                        "shape": {"M": 16, "N": 4096, "K": 4096, "layout": "NT", "bias": 0},
                        "winner": {"config": {"BLOCK_M": 16}},
                    },
                    {"shape": {"M": 32, "N": 4096, "K": 4096}, "winner": None},
                ]
            }
        )
    )
    assert gemm_forms.report_winners(report) == {(16, 4096, 4096, "NT", 0): {"BLOCK_M": 16}}


def test_reports_with_one_label_are_one_runs_parts(tmp_path: Path) -> None:
    def report(name: str, m: int, block_m: int) -> Path:
        path = tmp_path / name
        path.write_text(
            json.dumps(
                {
                    "shapes": [
                        {
                            "shape": {"M": m, "N": 4096, "K": 4096, "layout": "NT"},
                            "winner": {"config": {"BLOCK_M": block_m}},
                        }
                    ]
                }
            )
        )
        return path

    merged = gemm_forms.merged_winners(
        [("whole", report("a.json", 16, 16)), ("other", report("b.json", 16, 32)), ("whole", report("c.json", 64, 64))]
    )
    assert [label for label, _ in merged] == ["whole", "other"]
    assert merged[0][1] == {(16, 4096, 4096, "NT", 0): {"BLOCK_M": 16}, (64, 4096, 4096, "NT", 0): {"BLOCK_M": 64}}
    with pytest.raises(ValueError, match="both tuned 16x4096x4096 NT"):
        gemm_forms.merged_winners([("whole", tmp_path / "a.json"), ("whole", tmp_path / "b.json")])


def test_reports_are_labelled_by_name_or_by_their_place() -> None:
    assert gemm_forms.labelled_report("screens=out/tune.json", 1) == ("screens", Path("out/tune.json"))
    assert gemm_forms.labelled_report("out/a=b.json", 0) == ("prior", Path("out/a=b.json"))
    assert gemm_forms.labelled_report("tune.json", 2) == ("prior-3", Path("tune.json"))


def test_the_counters_script_refuses_bad_arguments_with_one_line_and_exit_2(tmp_path: Path) -> None:
    script = str(benchmark_script("forms_counters"))
    forms = tmp_path / "forms.json"
    forms.write_text(json.dumps({"shapes": []}))
    for args, said in (
        ([], "Usage"),
        ([str(tmp_path / "none.json"), "kernels/triton_gemm", "o.json", "1,2,3"], "No such file"),
        ([str(forms), "kernels/triton_gemm", "o.json", "1,x,3"], "shapes are M,N,K"),
    ):
        done = subprocess.run(
            [sys.executable, script, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done


def test_a_config_the_compiler_rejects_is_reported_and_the_others_still_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # On the H200's Triton 3.6 one warp-specialized seed failed in the compiler's LLVM lowering, and the raise
    # had ended the whole forms step: every other config's timing at every later shape was lost.
    claims_check = load_benchmark("claims_check")  # the module time_shape imports

    def calls(problem: Any, operands: Any, shape: Any, config: dict[str, Any]) -> dict[str, Any]:
        if config.get("WS"):
            raise RuntimeError("PassManager::run failed")
        return {"torch": "torch", "winner": config["BLOCK_M"]}

    monkeypatch.setattr(claims_check, "placed_operands", lambda problem, shape, placements, pads: [None] * placements)
    monkeypatch.setattr(claims_check, "matmul_calls", calls)
    monkeypatch.setattr(claims_check, "gate_errors", lambda problem, operands, shape, calls: {"winner": 0.0})
    monkeypatch.setattr(claims_check, "warm_up", lambda launches: None)
    monkeypatch.setattr(
        claims_check, "timed_blocks", lambda a, b, flush, blocks, clean=None: {"ratio": 1.0, "ci": [1.0, 1.0]}
    )
    base = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}
    picked = [("prior", base, None), ("ws", {**base, "WS": 1}, None), ("tma", {**base, "BLOCK_M": 128, "TMA": 1}, None)]
    found = gemm_forms.time_shape(None, {"M": 256}, picked, blocks=2, placements=2, flush=None)
    rows = {row["label"]: row for row in found["rows"]}
    assert rows["ws"]["gated"] is False and rows["ws"]["failed"] == "RuntimeError: PassManager::run failed"
    assert rows["prior"]["gated"] and rows["tma"]["gated"] and rows["tma"]["checked"]["ratio"] == 1.0
    assert set(gemm_forms.best_by_form(found)) == {"prior", "tma"}  # a config that did not run is no best


def test_another_version_of_the_spec_runs_the_same_configs_through_its_own_kernels(tmp_path: Path) -> None:
    from kerntune.model import Target

    shutil.copytree(KERNELS / "triton_gemm", tmp_path / "triton_gemm")
    copy = tmp_path / "triton_gemm" / "spec.py"
    ((name, variant),) = gemm_forms.load_variants([f"constants={copy}"])
    assert name == "constants" and variant.make_inputs.__module__ != _problem().make_inputs.__module__
    h200 = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132)
    shape = gemm_forms.parse_shape("M=1,N=6144,K=4096,layout=NT")
    winner = {"BLOCK_M": 16, "BLOCK_N": 1, "BLOCK_K": 1024, "GEMV": 1, "num_warps": 8, "num_stages": 1}
    picked = gemm_forms.variant_candidates([(name, variant)], shape, h200, {"gemv"}, [("prior", winner)])
    labels = [label for label, _, _ in picked]
    assert labels[0] == "constants:prior" and picked[0][1]["GEMV"] == 1  # the report's winner, on its kernels
    assert len(labels) > 2 and set(labels[1:]) == {"constants:gemv"}  # its own seeds of the form asked for
    assert all(problem is variant for _, _, problem in picked)
