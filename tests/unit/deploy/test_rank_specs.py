"""One table, many specs: each live call is served by the entry whose spec was fastest beside the library."""

from __future__ import annotations

from typing import Any

from kerntune.deploy.rank import call_identity, rank_specs


def entry(op: str, m: int, ratio: float | None, **extra: Any) -> dict[str, Any]:
    key = {"op": op, "source": op[:4], "dtype": "bfloat16", "M": m, "N": 4096, "K": 4096, "layout": "NT", "bias": 0}
    found: dict[str, Any] = {"key": key, "config": {"X": 1}, **extra}
    if ratio is not None:
        found["library_ratio"] = ratio
    return found


def test_the_fastest_spec_of_each_call_serves_and_the_others_are_outranked() -> None:
    entries = [entry("triton_gemm", 256, 0.97), entry("gluon_gemm", 256, 0.93), entry("cublaslt_gemm", 256, 0.99),
               entry("triton_gemm", 1, 0.70)]  # fmt: skip
    ranked = rank_specs(entries)
    marks = {(e["key"]["op"], e["key"]["M"]): e.get("outranked") for e in ranked}
    assert marks[("gluon_gemm", 256)] is None
    assert marks[("triton_gemm", 1)] is None  # alone at its call
    assert marks[("triton_gemm", 256)] == {"by": "gluon_gemm", "ratio": 0.93, "own_ratio": 0.97}
    assert marks[("cublaslt_gemm", 256)]["by"] == "gluon_gemm"


def test_entries_left_to_the_library_or_without_a_ratio_never_outrank() -> None:
    slow = {"ratio": 1.02, "why": "not faster"}
    ranked = rank_specs([entry("gluon_gemm", 512, 0.5, library_faster=slow), entry("triton_gemm", 512, None),
                         entry("cublaslt_gemm", 512, 0.98)])  # fmt: skip
    marks = {e["key"]["op"]: e.get("outranked") for e in ranked}
    assert marks == {"gluon_gemm": None, "triton_gemm": {"by": "cublaslt_gemm", "ratio": 0.98, "own_ratio": None},
                     "cublaslt_gemm": None}  # fmt: skip


def test_a_new_ranking_drops_old_marks() -> None:
    first = rank_specs([entry("triton_gemm", 64, 0.95), entry("gluon_gemm", 64, 0.99)])
    assert [e.get("outranked") is not None for e in first] == [False, True]
    first[0]["library_ratio"] = 1.5  # a later deploy of a slower triton winner
    second = rank_specs(first)
    assert [e.get("outranked") is not None for e in second] == [True, False]


def test_the_call_identity_ignores_which_spec_wrote_the_entry() -> None:
    assert call_identity(entry("a_spec", 8, 1.0)["key"]) == call_identity(entry("b_spec", 8, 1.0)["key"])
    assert call_identity(entry("a_spec", 8, 1.0)["key"]) != call_identity(entry("a_spec", 16, 1.0)["key"])
