"""A worker's answer for one candidate (``evaluate``'s plain dict, or a failure) as what the store records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kerntune.exec.pool import Outcome
from kerntune.model import Conditions, FailureKind, Measurement, Verdict
from kerntune.store import CandidateResult

if TYPE_CHECKING:
    from kerntune.tune.evaluate import CandidateReply


def candidate_result(outcome: Outcome) -> CandidateResult:
    """Turn a worker's answer into what the store records."""
    if outcome.status != "ok":
        kind = FailureKind(outcome.kind) if outcome.kind in FailureKind._value2member_map_ else FailureKind.ERROR
        reason = outcome.reason if outcome.status == "failed" else f"{outcome.kind}: {outcome.reason}"
        return CandidateResult("failed", failure=kind, reason=reason.strip())
    value: CandidateReply = outcome.value
    verdict = None
    if "verdict" in value:
        v = value["verdict"]
        verdict = Verdict("gate", v["outcome"], v["metric"], v["value"], v["threshold"], v["reason"], v["details"])
    measurement = None
    if value.get("samples_ms"):
        ci = value.get("ci_ms")
        measurement = Measurement(
            tuple(value["samples_ms"]),
            Conditions.from_dict(value["conditions"]),
            (float(ci[0]), float(ci[1])) if ci else None,
        )
    failure = value.get("failure")
    return CandidateResult(
        status="failed" if failure else "ok",
        failure=FailureKind(failure["kind"]) if failure else None,
        reason=failure["reason"] if failure else value.get("timing", ""),
        compile_s=value.get("compile_s"),
        binary_hash=value.get("binary_hash"),
        resources=value.get("resources") or {},
        measurement=measurement,
        verdict=verdict,
        gate_s=value.get("gate_s"),
        measure_s=value.get("measure_s"),
    )
