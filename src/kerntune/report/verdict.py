"""The run's verdict, first on its page: per shape the winner, its speedup over each baseline as a named speedup
(higher is better: "1.88× faster than torch"), and how it was checked (the gate, the rounds timed interleaved
with the reference in fresh processes, the second timer's agreement)."""

from __future__ import annotations

from html import escape

from kerntune.measure.second_timer import SHORT
from kerntune.model import Candidate
from kerntune.report.summary import RunReport, ShapeReport


def speedup_text(speedup: float, baseline: str) -> str:
    """A named speedup: "1.88× faster than X", for a winner slower than X "1.25× slower than X", and within
    half a percent "as fast as X (1.00×)"."""
    if abs(speedup - 1) < 0.005:
        return f"as fast as {baseline} (1.00×)"
    if speedup >= 1:
        return f"{speedup:.2f}× faster than {baseline}"
    return f"{1 / speedup:.2f}× slower than {baseline}"


def _rounds(n: int) -> str:
    return f"{n} round" if n == 1 else f"{n} rounds"


def _name(c: Candidate) -> str:
    return c.label or c.config.key or "default"


def checked_by(s: ShapeReport) -> list[str]:
    """How the winner's result was checked, one clause each: gate, interleaved timing, second timer."""
    w = s.winner
    if w is None:
        return []
    said = []
    if w.verdict is not None:
        v = w.verdict
        bound = f" ({v.metric} {v.value:.3g}, limit {v.threshold:.3g})" if v.value is not None and v.threshold else ""
        said.append(f"correctness gate: {v.outcome}{bound}")
    r = s.interleaved.get(w.id or -1)
    if r is not None and s.reference is not None and w is not s.reference:
        interval = f", 95% CI {r.low:.3f}–{r.high:.3f}" if r.low == r.low and r.high == r.high else ""
        said.append(
            f"timed interleaved with {_name(s.reference)} in fresh processes over {_rounds(r.n)}: "
            f"time ratio {r.ratio:.3f}{interval}"
        )
    elif w.confirmed is not None:
        said.append(f"confirmed in fresh processes: median {w.confirmed.median_ms:.4g} ms over {w.confirmed.n} samples")
    else:
        said.append("search-time median only: not confirmed in fresh processes")
    second = s.second_timer.get(w.id or -1)
    if second and "ratio" in second:
        agree = "agrees" if second.get("agrees") else "DISAGREES beyond 1%"
        timer = SHORT.get(second["timer"], second["timer"])
        said.append(f"second timer ({timer}): ratio {second['ratio']:.3f} over {_rounds(second['rounds'])}, {agree}")
    else:
        said.append("no second timer on this device")
    return said


def shape_verdict(s: ShapeReport) -> str:
    """One shape's verdict as HTML (escaped): winner, speedups, checks."""
    w = s.winner
    head = f"<h3>{escape(s.shape.key or 'every shape')}</h3>"
    if w is None:
        return f'<div class="verdict" data-shape="{escape(s.shape.key)}">{head}<p>No config passed the gate.</p></div>'
    best = w.best_measurement
    median = f" — median {best.median_ms:.4g} ms" if best else ""
    speedups = [(b, s.speedup_over(b)) for b in s.baselines if b.id != w.id and b.status == "ok" and s.speedup_over(b)]
    lines = "".join(
        f'<li class="speedup" data-speedup="{v:.6g}" data-baseline="{escape(_name(b))}">'
        f"<b>{escape(speedup_text(v, _name(b)))}</b></li>"
        for b, v in speedups
        if v is not None
    )
    if w.role == "baseline":  # the spec's default (or a library) was fastest: the search found nothing better
        lines = f"<li><b>the baseline {escape(_name(w))} itself won</b>: no searched config beat it</li>{lines}"
    lines = lines or "<li>no baseline timed beside it</li>"
    checks = "".join(f"<li>{escape(c)}</li>" for c in checked_by(s))
    return (
        f'<div class="verdict" data-shape="{escape(s.shape.key)}">{head}'
        f'<p class="winner">Winner: <code>{escape(w.config.key or _name(w))}</code>{escape(median)}</p>'
        f'<ul class="speedups">{lines}</ul><p class="how">How it was checked:</p><ul class="checks">{checks}</ul></div>'
    )


def verdict(report: RunReport) -> str:
    """The verdict section: one block per shape."""
    return '<section id="verdict"><h2>Verdict</h2>' + "".join(shape_verdict(s) for s in report.shapes) + "</section>"
