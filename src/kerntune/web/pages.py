"""The web page's HTML: the runs list with a form that starts a tune and follows it live, a run (the same page
``kerntune report`` writes, plus the ISA / occupancy diff of two candidates), and the lab's captures. Every value
from the store or a request is escaped; the only script is the page's own, inline."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from kerntune.model import Candidate, Run
from kerntune.report.page import STYLE, table

STRATEGIES = ("auto", "race", "exhaustive", "random", "tpe", "cmaes", "coordinate", "lever")

FOLLOW = r"""
async function post(url, body) {
  const r = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json'},
                              body: JSON.stringify(body)});
  const data = await r.json();
  if (!r.ok) throw new Error(data.detail || r.statusText);
  return data;
}
async function follow(job) {
  const box = document.getElementById('job');
  for (;;) {
    const s = await (await fetch('/api/jobs/' + job)).json();
    box.dataset.state = s.state;
    box.textContent = s.state + ' (' + s.elapsed_s + ' s) ' + (s.progress || s.error || '');
    if (s.state !== 'running') {
      const run = s.result && s.result.run ? s.result.run.id : null;
      if (s.result && s.result.validation) {
        const v = s.result.validation;
        box.textContent += ' validation (' + v.rule + ') ' + (v.passed ? 'passed' : 'FAILED') +
          (s.result.ratio ? ', variant/original time ' + s.result.ratio.toFixed(3) + ' (95% CI ' +
           s.result.interleaved.ci[0].toFixed(3) + '–' + s.result.interleaved.ci[1].toFixed(3) + ')' : '');
      } else if (s.result && s.result.median_ms !== undefined) {
        box.textContent += ' median ' + (s.result.median_ms * 1000).toFixed(2) + ' µs (' + s.result.mode +
          '), reproduces the capture: ' + s.result.reproduces_capture;
      } else if (s.result && (s.result.file || s.result.table)) {
        box.textContent += ' saved into ' + (s.result.file || s.result.table);
      }
      if (run) {
        const a = document.createElement('a');
        a.href = '/runs/' + run; a.id = 'job-run'; a.textContent = ' open run ' + run;
        box.appendChild(a);
        await refreshRuns();
      }
      return s;
    }
    await new Promise(ok => setTimeout(ok, 1000));
  }
}
async function refreshRuns() {
  const table = document.querySelector('table.runs');
  if (!table) return;
  const runs = await (await fetch('/api/runs')).json();
  while (table.rows.length > 1) table.deleteRow(1);
  for (const r of runs) {
    const row = table.insertRow();
    const link = document.createElement('a');
    link.href = '/runs/' + encodeURIComponent(r.id); link.textContent = r.id;
    row.insertCell().appendChild(link);
    for (const key of ['problem', 'device', 'strategy', 'status', 'created']) row.insertCell().textContent = r[key];
  }
}
async function startTune(form) {
  const box = document.getElementById('job');
  try {
    const body = {spec: form.spec.value, strategy: form.strategy.value};
    if (form.budget.value) body.budget = form.budget.value;
    const started = await post('/api/tunes', body);
    document.getElementById('stop').dataset.job = started.job;
    follow(started.job);
  } catch (e) { box.dataset.state = 'refused'; box.textContent = 'refused: ' + e.message; }
  return false;
}
async function stopJob() {
  const job = document.getElementById('stop').dataset.job;
  if (job) await post('/api/jobs/' + job + '/stop', {});
}
async function replay(name) {
  const started = await post('/api/lab/' + encodeURIComponent(name) + '/replay', {mode: 'isolated', iterations: 20});
  follow(started.job);
}
function variantOf(button) {
  const row = button.closest('tr');
  const body = {sets: row.querySelector('input.sets').value.trim().split(/\s+/).filter(x => x)};
  for (const key of ['variant', 'spec', 'table']) {
    const value = row.querySelector('input.' + key).value.trim();
    if (value) body[key] = value;
  }
  return body;
}
async function labJob(button, action) {
  const box = document.getElementById('job');
  const name = button.closest('tr').dataset.capture;
  try {
    const started = await post('/api/lab/' + encodeURIComponent(name) + '/' + action, variantOf(button));
    await follow(started.job);
  } catch (e) { box.dataset.state = 'refused'; box.textContent = 'refused: ' + e.message; }
}
function programOf() {
  const form = document.getElementById('program');
  const body = {program: form.program.value, args: form.args.value.trim().split(/\s+/).filter(x => x),
                profile: form.profile.checked};
  if (form.profile.checked && form.region.value.trim()) body.region = form.region.value.trim();
  return body;
}
async function listDispatches() {
  const box = document.getElementById('job');
  try {
    const s = await follow((await post('/api/dispatches', programOf())).job);
    if (s.state === 'done') fillDispatches(s.result);
  } catch (e) { box.dataset.state = 'refused'; box.textContent = 'refused: ' + e.message; }
  return false;
}
async function storedScope() {
  const box = document.getElementById('job');
  const name = document.getElementById('program').scope.value.trim();
  try {
    const r = await fetch('/api/scopes/' + name.split('/').map(encodeURIComponent).join('/'));
    const data = await r.json();
    if (!r.ok) throw new Error(data.detail || r.statusText);
    box.dataset.state = 'done';
    box.textContent = 'stored scope ' + name + (data.verdict ? ': ' + data.verdict : '');
    fillDispatches(data);
  } catch (e) { box.dataset.state = 'refused'; box.textContent = 'refused: ' + e.message; }
  return false;
}
// Kernels the library launches (cuBLAS, cuDNN, ATen's own, NCCL) and copies have no launch the lab can rebuild:
// their operator calls can be captured instead (the GEMM lines below the kernels).
const NOT_CAPTURED = {'vendor BLAS': 'its operator calls below', 'attention': 'a library kernel',
                      'ATen native': 'a library kernel', 'NCCL': 'a collective', 'memcpy': 'a copy',
                      'memset': 'a copy'};
function addRow(table, name, kind, launches, share, action) {
  const row = table.insertRow();
  row.dataset.kernel = name;
  row.insertCell().textContent = name;
  row.insertCell().textContent = kind;
  row.insertCell().textContent = launches;
  row.insertCell().textContent = share === null || share === undefined ? '' : (share * 100).toFixed(1) + '%';
  const cell = row.insertCell();
  if (NOT_CAPTURED[kind]) { cell.textContent = NOT_CAPTURED[kind]; return; }
  const button = document.createElement('button');
  button.textContent = 'Tune this kernel';
  button.onclick = action;
  cell.appendChild(button);
}
function fillDispatches(result) {
  const rows = result.launches || result.kernels || [];
  const table = document.querySelector('table.dispatches');
  while (table.rows.length > 1) table.deleteRow(1);
  table.rows[0].cells[3].textContent = result.kernels ? 'device time share' : 'launch share';
  for (const k of rows) {
    addRow(table, k.name, k.kind || k['class'] || '', k.launches, k.share, () => tuneKernel(k.name));
  }
  for (const g of result.gemms || []) {  // the operators behind the library's kernels: captured as calls
    const s = g.shape || {};
    const name = g.op + ' ' + s.M + 'x' + s.N + 'x' + s.K + ' ' + g.dtype + ' ' + (g.layout || '') +
      (g.bias ? ' +bias' : '');
    const share = result.device_us ? g.device_us / result.device_us : null;
    addRow(table, name, 'operator call', g.calls, share, () => tuneKernel(g.op.replace(/\.out$/, ''), g));
  }
  table.dataset.state = 'listed';
}
async function tuneKernel(kernel, gemm) {
  const box = document.getElementById('job');
  try {
    const body = {...programOf(), kernel: kernel, nth: 1};
    if (gemm) body.gemm = gemm;
    const started = await post('/api/lab/captures', body);
    const s = await follow(started.job);
    if (s.state === 'done') {
      const a = document.createElement('a');
      a.href = '/lab#' + encodeURIComponent(started.capture); a.id = 'open-capture';
      a.textContent = ' open capture ' + started.capture + ' in the lab';
      box.appendChild(a);
    }
  } catch (e) { box.dataset.state = 'refused'; box.textContent = 'refused: ' + e.message; }
}
"""


def page(title: str, body: str) -> str:
    nav = '<nav><a href="/">runs</a> · <a href="/dispatches">dispatches</a> · <a href="/lab">lab</a></nav>'
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE} nav{{margin-bottom:12px}} #job{{font-family:monospace;margin:8px 0}}</style>"
        f"<script>{FOLLOW}</script></head><body>{nav}{body}</body></html>"
    )


def _side(side: dict[str, Any]) -> str:
    text = side.get("label") or side.get("name") or json.dumps(side, separators=(",", ":"))
    return escape(str(text)[:80])


def ab_table(records: Sequence[Any]) -> str:
    """The latest A/B verdicts (``kerntune ab``): sides, B/A ratio with its 95% interval, the noise band, the
    verdict and whether a claim it was asked to check failed."""
    rows = [
        (
            escape(r.created),
            _side(r.a),
            _side(r.b),
            escape(f"{r.ratio:.4f}") if r.ratio is not None else "—",
            escape(f"{r.ci_low:.4f}–{r.ci_high:.4f}") if r.ci_low is not None and r.ci_high is not None else "—",
            escape(f"±{r.band:.2%}") if r.band is not None else "—",
            f"<b>{escape(r.verdict)}</b>",
            escape(r.expect or ""),
            "failed" if r.claim_failed else "",
        )
        for r in records
    ]
    header = ("created", "A", "B", "B/A", "95% CI", "noise band", "verdict", "expected", "claim")
    return "<h2>A/B verdicts</h2>" + (table(header, rows, "ab", markup=True) if rows else "<p>none yet</p>")


def runs_page(runs: list[Run], specs: list[str], ab: Sequence[Any] = ()) -> str:
    options = "".join(f'<option value="{escape(s)}">{escape(s)}</option>' for s in specs)
    strategies = "".join(f"<option>{s}</option>" for s in STRATEGIES)
    form = (
        f'<form id="tune" onsubmit="startTune(this); return false;"><label>spec <select name="spec">{options}'
        f'</select></label> <label>strategy <select name="strategy">{strategies}</select></label> '
        '<label>budget <input name="budget" size="10" placeholder="100, 90s"></label> '
        '<button type="submit" id="start">Start tune</button> <button type="button" id="stop" '
        'onclick="stopJob()">Stop</button></form><div id="job" data-state="idle"></div>'
    )
    rows = [
        (
            f'<a href="/runs/{escape(r.id)}">{escape(r.id)}</a>',
            escape(r.problem),
            escape(r.target.device_name),
            escape(r.strategy),
            escape(r.status),
            escape(r.created),
        )
        for r in runs
    ]
    return page(
        "kerntune runs",
        "<h1>kerntune</h1><h2>Start a tune</h2>"
        + form
        + "<h2>Runs</h2>"
        + table(("run", "problem", "device", "strategy", "status", "created"), rows, "runs", markup=True)
        + ab_table(ab),
    )


def diff_form(run_id: str, candidates: list[Candidate]) -> str:
    timed = [c for c in candidates if c.id is not None and c.status == "ok"]
    options = "".join(
        f'<option value="{c.id}">{c.id}: {escape(c.role)} {escape(c.config.key or c.label)}</option>' for c in timed
    )
    return (
        f'<h2>Compare two candidates</h2><form method="get" action="/runs/{escape(run_id)}/diff">'
        f'<select name="a">{options}</select> vs <select name="b">{options}</select> '
        '<button type="submit">ISA and occupancy diff</button></form>'
    )


def _flat(resources: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in resources.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _value(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else json.dumps(value)


def diff_page(run_id: str, a: Candidate, b: Candidate) -> str:
    left, right = _flat(dict(a.resources)), _flat(dict(b.resources))
    for side, c in ((left, a), (right, b)):
        m = c.best_measurement
        side["median_ms"] = m.median_ms if m else None
    rows = []
    for key in sorted(set(left) | set(right)):
        va, vb = left.get(key), right.get(key)
        mark = ' class="differs"' if va != vb else ""
        rows.append((f"<span{mark}>{escape(key)}</span>", escape(_value(va)), escape(_value(vb))))
    title = f"{a.id}: {a.config.key or a.label} vs {b.id}: {b.config.key or b.label}"
    return page(
        f"diff {run_id}",
        f'<h1>{escape(title)}</h1><p><a href="/runs/{escape(run_id)}">back to the run</a>'
        "</p>"
        + table(("resource", f"candidate {a.id}", f"candidate {b.id}"), rows, "diff", markup=True)
        + "<style>.differs{font-weight:bold;color:#cc3311}</style>",
    )


def _compared(row: dict[str, Any]) -> str:
    """What a comparison ran: a spec at its config changes, a variant source, or config changes."""
    what = (f"spec {row['spec'].rsplit('/', 1)[-1]}" if row.get("spec") else row.get("variant") or "") + (
        " " + " ".join(f"{k}={v}" for k, v in (row.get("overrides") or {}).items()) if row.get("overrides") else ""
    )
    return what.strip() or "the original"


def _comparisons(rows: list[dict[str, Any]]) -> str:
    """A capture's comparisons, newest last: what ran, its validation, the variant/original time ratio by each
    timer with its 95% interval; the fastest one that passed validation is marked."""
    passed = [r for r in rows if (r.get("validation") or {}).get("passed") and r.get("ratio")]
    best = min(passed, key=lambda r: float(r["ratio"])) if passed else None
    lines = []
    for r in rows:
        side, check = r.get("interleaved") or {}, r.get("validation") or {}
        second = side.get("second_timer") or {}
        events = (
            f"{r['ratio']:.3f} ({side['ci'][0]:.3f}–{side['ci'][1]:.3f})"
            if r.get("ratio") and side.get("ci")
            else "not timed"
        )
        profiler = (
            f"{second['ratio']:.3f} ({second['ci'][0]:.3f}–{second['ci'][1]:.3f})"
            + ("" if second.get("agrees", True) else " DISAGREES")
            if second.get("ratio") and second.get("ci")
            else "—"
        )
        verdict = "passed" if check.get("passed") else f"FAILED {check.get('argument') or ''}".strip()
        lines.append(
            (
                escape(_compared(r)),
                escape(verdict),
                escape(events),
                escape(profiler),
                "<b>fastest</b>" if r is best else "",
            )
        )
    return table(
        ("compared with the original", "validation", "time ratio, events (95% CI)", "profiler (CUPTI)", ""),
        lines,
        "comparisons",
        markup=True,
    )


def _results(history: list[dict[str, Any]]) -> str:
    """A capture's results as HTML: the latest replay median of each mode, its comparisons, its saves."""
    medians = {}
    for r in history:
        if r.get("job") == "replay" and r.get("median_ms"):
            spread = f", spread {r['spread']:.1%}" if r.get("spread") else ""
            medians[str(r.get("mode"))] = f"{r.get('mode')} {r['median_ms'] * 1e3:.2f} µs{spread}"
    parts = [escape("replay medians: " + " · ".join(medians.values()))] if medians else []
    compared = [r for r in history if r.get("job") == "compare"]
    if compared:
        parts.append(_comparisons(compared))
    parts += [escape(f"saved: {r.get('saved')}") for r in history if r.get("job") == "save"]
    return "<br>".join(parts) or "nothing run yet"


def lab_page(captures: list[dict[str, Any]]) -> str:
    """Each capture with its results (replay medians by mode, every comparison with both timers' ratios, the
    fastest correct one marked, what was saved), and its actions: replay, compare a variant (a source file in the
    programs folder, or NAME=VALUE config changes, or a spec for an operator call), save one that passed."""
    rows = []
    for c in captures:
        actions = (
            (
                "<button onclick=\"replay(this.closest('tr').dataset.capture)\">Replay</button> "
                '<input class="variant" size="14" placeholder="variant file"> '
                '<input class="sets" size="14" placeholder="NAME=VALUE ..."> '
                '<input class="spec" size="12" placeholder="spec (operator call)"> '
                '<input class="table" size="12" placeholder="served table .json"> '
                "<button onclick=\"labJob(this, 'compare')\">Compare</button> "
                "<button onclick=\"labJob(this, 'save')\">Save</button>"
            )
            if not c.get("closed")
            else "closed"
        )
        name = escape(c["name"], quote=True)  # the row carries its capture's name, never the script
        head = (
            f'<td class="name"><b>{escape(c["name"])}</b><br><span class="kernel">'
            f"{escape(str(c.get('kernel', '')))}</span><br>{len(c['history'])} runs</td>"
        )
        rows.append(
            f'<tr id="{name}" data-capture="{name}">{head}<td>{_results(c["history"])}</td>'
            f'<td class="actions">{actions}</td></tr>'
        )
    body = f'<table class="captures"><tr><th>capture, kernel</th><th>results</th><th></th></tr>{"".join(rows)}</table>'
    style = (
        "<style>.captures td{vertical-align:top}.captures .name{max-width:22em;overflow-wrap:anywhere}"
        ".kernel{font-family:monospace;font-size:12px}.captures .actions{width:15em}"
        ".comparisons td,.comparisons th{font-size:12px}</style>"
    )
    return page("kerntune lab", '<h1>Lab captures</h1><div id="job" data-state="idle"></div>' + body + style)


def dispatches_page(programs: Sequence[str]) -> str:
    """A program's dispatch list: by launches through the lab's hooks (any device), by device-time share under the
    profiler (a GPU), or from a stored ``kerntune scope --json`` result; with the scope's GEMM operator lines (the
    calls behind the library's kernels). Each row's "Tune this kernel" captures that kernel's first launch, or the
    first call of that operator at that shape, dtype and layout, for the lab."""
    options = "".join(f'<option value="{escape(p, quote=True)}">{escape(p)}</option>' for p in programs)
    form = (
        f'<form id="program" onsubmit="listDispatches(); return false;"><label>program <select name="program">'
        f'{options}</select></label> <label>arguments <input name="args" size="30"></label> '
        '<label><input type="checkbox" name="profile"> by device time (kerntune scope: a GPU)</label> '
        '<label>steady-state region <input name="region" size="8" placeholder="step"></label> '
        '<button type="submit">List dispatches</button> or <label>a stored scope <input name="scope" size="24" '
        'placeholder="scope.json (kerntune scope --json)"></label> <button type="button" '
        'onclick="storedScope()">Show stored scope</button></form><div id="job" data-state="idle"></div>'
    )
    style = (
        "<style>.dispatches td:first-child{font-family:monospace;font-size:12px;overflow-wrap:anywhere;"
        "max-width:44em}.dispatches button{white-space:nowrap}</style>"
    )  # kernel names run to 300 characters
    return page(
        "kerntune dispatches",
        "<h1>Dispatch list</h1>" + form + table(("kernel", "class", "launches", "share", ""), [], "dispatches") + style,
    )
