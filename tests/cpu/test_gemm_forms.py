"""The kernel-forms benchmark's own logic (benchmarks/gemm_forms.py), without a GPU: which configs it picks at a
shape, how it names their forms, how it summarizes, and how it refuses bad arguments."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, ROOT

pytest.importorskip("torch")
pytest.importorskip("triton")
sys.path.insert(0, str(ROOT / "benchmarks"))
_spec = importlib.util.spec_from_file_location("gemm_forms", ROOT / "benchmarks" / "gemm_forms.py")
assert _spec is not None and _spec.loader is not None
gemm_forms = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gemm_forms)


def _problem() -> Any:
    from kerntune.tune.spec import load_spec

    return load_spec(str(EXAMPLES / "triton_matmul")).problem


def test_the_forms_picked_at_a_shape_are_the_seeds_valid_there_and_the_reports_winner_first() -> None:
    from kerntune.model import Target

    h200 = Target("triton", "nvidia", "sm_90", "NVIDIA H200", 132)
    prior = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 4}
    wave = gemm_forms.parse_shape("M=256,N=10240,K=8192,layout=NT")
    picked = gemm_forms.candidates(_problem(), wave, h200, {"stream_k", "sk_tail", "gemv"}, prior)
    labels = [label for label, _ in picked]
    assert labels[0] == "prior" and picked[0][1]["STREAM_K"] == 0  # completed from the spec's default
    assert {"stream_k", "sk_tail"} <= set(labels) and "gemv" not in labels  # 160 tiles on 132 SMs, M > 8
    assert all(gemm_forms.form_of(config) == label for label, config in picked[1:])
    decode = gemm_forms.candidates(_problem(), gemm_forms.parse_shape("M=1,N=6144,K=4096,layout=NT"), h200,
                                   {"gemv"}, None)
    assert decode and {label for label, _ in decode} == {"gemv"}


def test_the_summary_sets_each_forms_best_beside_the_reports_winner() -> None:
    def row(label: str, ratio: float, gated: bool = True) -> dict[str, Any]:
        return {"label": label, "gated": gated, "checked": {"ratio": ratio}}

    done = [{"rows": [row("prior", 1.25), row("stream_k", 1.05), row("stream_k", 0.99), row("sk_tail", 2.0, False)]},
            {"rows": [row("prior", 1.0), row("stream_k", 1.1)]}]
    found = gemm_forms.summary(done)
    assert found["geomean_ratio_by_label"]["stream_k"] == pytest.approx((0.99 * 1.1) ** 0.5)
    assert found["shapes_by_label"] == {"prior": 2, "stream_k": 2}  # a config that failed its gate is no best
    assert found["prior_over_best_geomean"] == pytest.approx((1.25 / 0.99 * 1.0) ** 0.5)


def test_bad_arguments_are_refused_with_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "shapes.txt"
    bad.write_text("M=16,N=4096\n")
    for args, said in ((["--forms", "streamk"], "unknown form 'streamk'"), (["--shapes", str(bad)], "M, N and K"),
                       (["--report", str(tmp_path / "none.json")], "is not a file"), (["--blocks", "1"], "--blocks")):
        done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gemm_forms.py"), str(tmp_path / "o.json"),
                               *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done
    assert not (tmp_path / "o.json").exists()


def test_a_reports_winners_are_read_by_shape(tmp_path: Path) -> None:
    report = tmp_path / "tune.json"
    report.write_text(json.dumps({"shapes": [
        {"shape": {"M": 16, "N": 4096, "K": 4096, "layout": "NT", "bias": 0}, "winner": {"config": {"BLOCK_M": 16}}},
        {"shape": {"M": 32, "N": 4096, "K": 4096}, "winner": None}]}))
    assert gemm_forms.report_winners(report) == {(16, 4096, 4096, "NT", 0): {"BLOCK_M": 16}}
