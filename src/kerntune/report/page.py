"""``kerntune report TUNING_RUN -o report.html``: one self-contained HTML file of a run — no script, stylesheet or
image is fetched from anywhere. Per shape: the winner, baselines and their speedups, outcome counts, where the
time went, the sample distributions of the winner, finalists and baselines, the finalists' search-time median
beside their confirmed one, and the search trace against evaluations and seconds; the roofline of every shape
when the run recorded a calibration and the spec a cost; failed candidates with their reasons. The numbers the
page shows are also embedded as JSON (``<script type="application/json" id="kerntune-report">``), the same
``report_json`` that ``kerntune show --json`` prints. The verdict leads (``report.verdict``); each shape's configs
are a table that sorts and filters (``report.configs``, the page's one inline script).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from kerntune.model import Candidate
from kerntune.report import charts, configs
from kerntune.report.importance import MIN_CONFIGS, parameter_importance, varying
from kerntune.report.roofline import roofline_points, roofs_of
from kerntune.report.summary import RunReport, ShapeReport, report_json
from kerntune.report.verdict import speedup_text, verdict

STYLE = """body{font:15px system-ui,sans-serif;margin:24px auto;max-width:980px;color:#222;line-height:1.4}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f3f3f3}h2{margin-top:32px;border-bottom:1px solid #ddd}.chart{display:block;margin:8px 0}
code{font-size:13px}#verdict .verdict{border-left:4px solid #228833;padding:2px 12px;margin:8px 0}
#verdict .speedups{font-size:18px;margin:4px 0}#verdict .checks{margin:4px 0;color:#333}
#verdict h3{margin:4px 0}.configs th{cursor:pointer;user-select:none}
.configs th[data-sort=ascending]::after{content:" ▲"}.configs th[data-sort=descending]::after{content:" ▼"}
.configs tr.winner td{background:#e8f4ea;font-weight:bold}.configs td[data-value]{text-align:right}
.configs-box .filters label{margin-right:10px}.configs-box .shown{color:#555}"""


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], cls: str, *, markup: bool = False) -> str:
    """An HTML table; cells are escaped, unless ``markup`` says the caller already made them HTML (and escaped
    what it put in them)."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    cell = str if markup else (lambda v: escape(str(v)))
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


def fields(rows: Sequence[tuple[str, Any]], cls: str) -> str:
    """A table of named values: each name a row header, no empty header row above them."""
    body = "".join(f'<tr><th scope="row">{escape(str(k))}</th><td>{escape(str(v))}</td></tr>' for k, v in rows)
    return f'<table class="{cls}">{body}</table>'


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def _label(c: Candidate) -> str:
    return f"{c.role}: {c.label or c.config.key or 'default'}"


def _shown(s: ShapeReport) -> list[Candidate]:
    """Winner, finalists, baselines, slowest: each once, those with samples."""
    picked: list[Candidate] = []
    for c in [s.winner, *s.finalists, *s.baselines, s.slowest]:
        if c is not None and c.best_measurement is not None and all(c.id != p.id for p in picked):
            picked.append(c)
    return picked[:14]


def _shape_section(report: RunReport, s: ShapeReport, trace: list[tuple[int, str, float, float]]) -> str:
    w = s.winner
    best = w.best_measurement if w else None
    summary = [
        ("winner", w.config.key if w else "none passed the gate"),
        ("median ms", _ms(best.median_ms if best else None)),
        ("gate", w.verdict.outcome if w and w.verdict else "—"),
        (
            "outcomes",
            ", ".join(f"{k} {v}" for k, v in s.outcome_counts.items()) + (f"; {s.coverage}" if s.coverage else ""),
        ),
        ("seconds", ", ".join(f"{k} {v:.3g}" for k, v in s.seconds.items())),
    ]
    baselines = [
        (
            b.label or b.config.key,
            _ms(b.best_measurement.median_ms if b.best_measurement else None),
            escape(speedup_text(v, b.label or b.config.key or "default")) if (v := s.speedup_over(b)) else "—",
        )
        for b in s.baselines
    ]
    shown = _shown(s)
    mine = [t for t in trace if t[1] == s.shape.key]
    start = mine[0][3] if mine else 0.0
    parts = [
        f'<section class="shape" data-shape="{escape(s.shape.key)}"><h2>{escape(s.shape.key)}</h2>',
        fields(summary, "summary"),
        table(("baseline", "median ms", "winner's speedup"), baselines, "baselines") if baselines else "",
        configs.config_table(s),
        "<h3>Samples</h3>" if shown else "",
        charts.distributions(
            [
                (_label(c), c.best_measurement.samples_ms, c.best_measurement.median_ms)
                for c in shown
                if c.best_measurement
            ],
            f"samples at {s.shape.key}",
        ),
    ]
    finalists = [
        (_label(c), c.measurement.median_ms if c.measurement else None, c.confirmed.median_ms if c.confirmed else None)
        for c in s.finalists
    ]
    rows = [(label, a, b) for label, a, b in finalists if a is not None]
    if rows:
        parts += ["<h3>Search-time vs confirmed medians</h3>", charts.pairs(rows, f"finalists at {s.shape.key}")]
    parts.append(_parameters(s))
    if mine:
        parts += [
            "<h3>Search trace</h3>",
            charts.trace(
                [(float(i + 1), m) for i, (_, _, m, _) in enumerate(mine)],
                "evaluations",
                f"best so far by evaluation at {s.shape.key}",
            ),
            charts.trace([(t - start, m) for _, _, m, t in mine], "s", f"best so far by seconds at {s.shape.key}"),
        ]
    if s.failed:
        parts += [
            "<h3>Failed</h3>",
            table(
                ("config", "failure", "reason"),
                [(c.config.key, c.failure.value if c.failure else "", c.reason[:300]) for c in s.failed],
                "failed",
            ),
        ]
    return "".join(parts) + "</section>"


def _parameters(s: ShapeReport) -> str:
    """Time by each tunable parameter's values over the shape's timed configs, and which parameters mattered."""
    rows = [
        (c.config.as_dict(), c.measurement.median_ms)
        for c in s.all_candidates
        if c.role != "baseline" and c.status == "ok" and c.measurement is not None
    ]
    params = varying(rows)
    if len(rows) < 2 or not params:
        return ""
    importance = parameter_importance(rows)
    said = (
        ", ".join(f"{name} {score:.2f}" for name, score in importance.items())
        if importance
        else f"not scored: {len(rows)} timed configs (PED-ANOVA needs {MIN_CONFIGS} and two varying parameters)"
    )
    ranked = sorted(params, key=lambda n: (-(importance or {}).get(n, 0.0), -len(params[n])))
    # The grid also shows baselines that are points of the space (the spec's default config).
    points = rows + [
        (c.config.as_dict(), c.measurement.median_ms)
        for c in s.baselines
        if c.status == "ok" and c.measurement is not None and c.config.items
    ]
    pair = (
        "<h3>Two parameters</h3>"
        + charts.contour(
            points,
            (ranked[1], params[ranked[1]]),
            (ranked[0], params[ranked[0]]),
            f"{ranked[0]} by {ranked[1]} at {s.shape.key}",
            s.winner.config.as_dict() if s.winner else None,
        )
        if len(ranked) >= 2
        else ""
    )
    return (
        "<h3>Time by parameter</h3>"
        f'<p class="importance">Which parameters moved the time (Optuna PED-ANOVA, search-time medians): '
        f"{escape(said)}</p>"
        + pair
        + "<h3>Each parameter's values</h3>"
        + charts.parameters(rows, params, importance, f"time by parameter at {s.shape.key}")
    )


def _roofline(report: RunReport) -> str:
    ceilings = report.run.options.get("ceilings")
    points = roofline_points(report)
    if not ceilings or not points:
        return "<p>No roofline: the run recorded no calibration, or the spec has no cost model.</p>"
    copy, roofs = roofs_of(report, dict(ceilings))
    return "<h2>Roofline</h2>" + charts.roofline(points, roofs, copy, "roofline")


def render(report: RunReport, trace: list[tuple[int, str, float, float]]) -> str:
    """The page, from a run's report and its search trace (``Store.measured_at``)."""
    run = report.run
    head = [
        ("run", run.id),
        ("problem", run.problem),
        ("device", run.target.device_name),
        ("arch", run.target.arch),
        ("strategy", run.strategy),
        ("dtype", run.dtype),
        ("status", run.status),
        ("stop reason", run.stop_reason),
        ("created", run.created),
        ("elapsed s", f"{run.elapsed_s:.1f}"),
        ("timing claimed", run.target.claims_timing),
    ]
    data = json.dumps(report_json(report)).replace("</", "<\\/")  # never closes the script element early
    body = [
        f"<h1>kerntune run {escape(run.id)}</h1>",
        verdict(report),
        "<h2>Run</h2>",
        fields(head, "run"),
        *(_shape_section(report, s, trace) for s in report.shapes),
        _roofline(report),
        f'<script type="application/json" id="kerntune-report">{data}</script>',
        f"<script>{configs.SCRIPT}</script>",
    ]
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>kerntune {escape(run.id)}</title>'
        f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    )
