"""The training step served by ``kerntune run``, against the same step on the library: what the suite's ``train`` step
measured, read back and judged.

    python benchmarks/gemm-payoff/train_served.py --library SCOPE.json --served SCOPE.json
        --library-losses L.json --served-losses L.json --verify VERIFY.json [--loss-gate 0.01] [--out OUT.json]

Inputs, each from a fresh process of ``train_step.py`` on the same seed:
  --library         ``kerntune scope --region step --json`` of the step alone;
  --served          the same, of the step under ``kerntune run --table T``;
  --*-losses        each run's ``train_step.py --losses`` (every step's loss, warm-up first);
  --verify          ``kerntune verify --report`` of the step under ``kerntune run``: engagement, then the end-to-end
                    A/B (table off against on, fresh processes).
The acceptance, one line each: the GEMM device time a step (the profiler's kernel durations under aten::mm and
aten::addmm, within the ``step`` ranges) lower served than on the library; every served entry engaged; every step's
loss within ``--loss-gate`` (relative) of the library run's; the end-to-end A/B not a loss, which needs its 95%
interval's top within the A/B's noise band (an undecided A/B is not met).
Exit 0 once every input was read (whatever the acceptance says), 2 with one line on a missing or unreadable input.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))  # payoff_shapes: the suite's shared readers
from payoff_shapes import SERVED_OPS, OneLineParser
from payoff_shapes import fail as fail_in


@dataclass(frozen=True)
class GemmTime:
    """One run's GEMM device time, in microseconds a step, overall and by key."""

    steps: int
    per_step_us: float
    by_key_us: dict[str, float]


@dataclass(frozen=True)
class Judged:
    """What the acceptance reads, and each line's verdict."""

    library: GemmTime
    served: GemmTime
    max_loss_rel: float
    loss_gate: float
    entries: int
    never_engaged: list[str]
    serves_nothing: str | None
    hit_rate: float | None
    end_to_end: dict[str, Any] | None
    acceptance: dict[str, bool]


def fail(message: str) -> NoReturn:
    fail_in("train_served.py", message)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        fail(f"{path}: {exc}")


def gemm_time(scope: dict[str, Any], where: Path) -> GemmTime:
    """The GEMM device time a step of one ``kerntune scope --region step`` report."""
    spans = int((scope.get("window") or {}).get("spans") or 0)
    if spans < 1:
        fail(f"{where}: no 'step' range in the scope report (was it run with --region step?)")
    by_key: dict[str, float] = {}
    for g in scope.get("gemms") or []:
        if g.get("op") not in SERVED_OPS or g.get("device_us") is None:
            continue
        s = g["shape"]
        key = f"M={s['M']},N={s['N']},K={s['K']},layout={g.get('layout')}" + (",bias=1" if g.get("bias") else "")
        by_key[key] = by_key.get(key, 0.0) + float(g["device_us"]) / spans
    return GemmTime(spans, sum(by_key.values()), dict(sorted(by_key.items(), key=lambda kv: -kv[1])))


def max_relative_difference(library: list[float], served: list[float], where: Path) -> float:
    if not library or len(library) != len(served):
        fail(f"{where}: {len(served)} losses against the library run's {len(library)}: the runs are not alike")
    return max(abs(s - a) / max(abs(a), 1e-12) for a, s in zip(library, served, strict=True))


def shown_not_slower(e2e: dict[str, Any]) -> bool:
    """The A/B (table on over off, time ratio) is no loss and its interval's top lies within its noise band."""
    ci, band = e2e.get("ci") or [None, None], e2e.get("band")
    top = ci[1] if len(ci) == 2 else None
    return e2e.get("verdict") in ("win", "noise") and top is not None and band is not None and top <= 1.0 + band


def judge(library: GemmTime, served: GemmTime, max_rel: float, gate: float, verify: dict[str, Any]) -> Judged:
    entries = list(verify.get("entries") or [])
    never = [str(k) for k in verify.get("never_engaged") or []]
    nothing = verify.get("serves_nothing")
    e2e = verify.get("end_to_end")
    acceptance = {
        "less GEMM device time a step than without the table": served.per_step_us < library.per_step_us,
        "every served entry engaged": bool(entries) and not never and nothing is None,
        "loss within the gate": max_rel <= gate,
        # Not a loss only where the interval shows it: an undecided A/B (its top past the band) is not evidence.
        "the end-to-end A/B is not a loss": e2e is not None and shown_not_slower(e2e),
    }
    return Judged(library, served, max_rel, gate, len(entries), never, nothing, verify.get("hit_rate"), e2e, acceptance)


def report(j: Judged) -> list[str]:
    lib, srv = j.library, j.served
    lines = [f"GEMM device time a step: library {lib.per_step_us / 1e3:.3f} ms, served {srv.per_step_us / 1e3:.3f} ms"]
    for key, us in lib.by_key_us.items():
        there = srv.by_key_us.get(key)
        ratio = f" ({us / there:.3f}x)" if there else ""
        lines.append(f"  {key}: {us / 1e3:.3f} -> {(there or 0) / 1e3:.3f} ms{ratio}")
    lines.append(f"losses: the largest relative difference over the steps {j.max_loss_rel:.2e} (gate {j.loss_gate:g})")
    engaged = j.entries - len(j.never_engaged)
    rate = "n/a" if j.hit_rate is None else f"{j.hit_rate:.1%}"
    lines.append(
        f"engagement: {engaged} of {j.entries} entries engaged, hit rate {rate}"
        + (f"; serves nothing: {j.serves_nothing}" if j.serves_nothing else "")
    )
    if j.end_to_end:
        e = j.end_to_end
        lines.append(
            f"end-to-end A/B (table on over off): {e.get('verdict')}, ratio {e.get('ratio')}, 95% CI {e.get('ci')}, "
            f"{e.get('pairs')} pairs; {e.get('reason') or ''}".rstrip("; ")
        )
    else:
        lines.append("end-to-end A/B: not run (the table served nothing, or verify ran with --no-ab)")
    lines += [f"ACCEPTANCE {name}: {'met' if ok else 'NOT met'}" for name, ok in j.acceptance.items()]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="train_served.py", description=__doc__)
    for name in ("library", "served", "library-losses", "served-losses", "verify"):
        p.add_argument(f"--{name}", type=Path, required=True)
    p.add_argument("--loss-gate", type=float, default=1e-2)
    p.add_argument("--out", type=Path)
    opts = p.parse_args(argv)
    if not opts.loss_gate > 0:
        fail(f"--loss-gate {opts.loss_gate}: give a positive relative tolerance")
    library = gemm_time(_read(opts.library), opts.library)
    served = gemm_time(_read(opts.served), opts.served)
    max_rel = max_relative_difference(_read(opts.library_losses), _read(opts.served_losses), opts.served_losses)
    judged = judge(library, served, max_rel, opts.loss_gate, _read(opts.verify))
    print("\n".join(report(judged)))
    if opts.out is not None:
        opts.out.write_text(json.dumps(asdict(judged), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
