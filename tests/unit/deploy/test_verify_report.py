"""What kerntune verify's report holds beyond engagement: which gate decided the served calls, and every fresh
process of the end-to-end A/B, so a wide interval can be read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.deploy.test_verify_misses import _report


def test_the_report_names_the_gate_and_lists_each_ab_process_in_run_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kerntune.deploy import verify as verify_module
    from kerntune.settings import Settings
    from kerntune.store import Store
    from kerntune.store.claims import ABRecord, ProcessRecord

    def profiled(command: list[str], env: dict[str, str]) -> dict[str, Any]:
        out = Path(env["KERNTUNE_VERIFY_OUT"])
        (out / "dispatch-1.json").write_text(json.dumps(_report(3)))
        (out / "serve-1.json").write_text(
            json.dumps({"ops": {"aten::mm": {"served": 3}}, "gate": "native", "planned_forms": 2, "plan_checks": 3})
        )
        return {"exit_code": 0, "gpu": False, "kernels": [], "gemms": [], "stderr": ""}

    values = [("A", 3.5), ("B", 4.9), ("B", 3.4), ("A", 3.6)]
    processes = tuple(ProcessRecord(seq=i, side=s, value=v, samples=(v,), info={}) for i, (s, v) in enumerate(values))
    record = ABRecord(
        id="ab-1", created="now", kind="ab", a={}, b={}, target={}, conditions={}, scheme="fresh", ratio=1.19,
        ci_low=0.9, ci_high=1.57, band=0.01, verdict="noise", expect=None, claim_failed=False, reason="wide",
        hashes={}, wall_s=1.0, processes=tuple(reversed(processes)),
    )  # fmt: skip
    monkeypatch.setattr(verify_module, "profile_program", profiled)
    monkeypatch.setattr(verify_module, "run_ab", lambda *args, **kwargs: record)
    found = verify_module.verify(["prog"], Store(tmp_path / "store"), Settings.from_env())
    assert found["gates"] == ["native"]
    assert found["planned_forms"] == 2 and found["plan_checks"] == 3
    assert found["end_to_end"]["processes"] == [{"side": s, "value": v} for s, v in values]
    assert found["end_to_end"]["pairs"] == 2
