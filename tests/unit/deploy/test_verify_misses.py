"""kerntune verify's account of what a served program missed."""

from __future__ import annotations


def test_verify_gives_a_missed_gemm_key_the_device_time_of_its_library_calls() -> None:
    from kerntune.deploy.verify import _gemm_time
    from kerntune.runtime.corpus import CorpusLine

    gemms = [CorpusLine(op="aten::mm", shape={"M": 16, "N": 64, "K": 64}, layout="NT", bias=0, calls=3,
                        device_us=30.0),
             CorpusLine(op="aten::mm", shape={"M": 16, "N": 64, "K": 64}, layout="NN", bias=0, calls=1, device_us=9.0)]
    key = {"op": "triton_matmul", "M": 16, "N": 64, "K": 64, "layout": "NT", "bias": 0}
    assert _gemm_time(key, {"gemms": gemms}) == 30.0  # its layout only
    assert _gemm_time({**key, "M": 32}, {"gemms": gemms}) is None  # the profile has none of it
    assert _gemm_time({"op": "rmsnorm", "M": 16}, {"gemms": gemms}) is None  # not a GEMM's key
