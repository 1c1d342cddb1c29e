"""Every timed config of a shape as a table that sorts (click a column heading, or Enter on it) and filters (a
text box: words that must all appear, ``NAME=VALUE`` for one parameter's value; and a choice per parameter), in
the browser, by the page's one inline script. No build step, nothing fetched. Each numeric cell carries its
number as ``data-value``, so sorting is by number, not by text, and a test can read it."""

from __future__ import annotations

from html import escape

from kerntune.model import Candidate
from kerntune.report.importance import varying
from kerntune.report.summary import ShapeReport

MAX_ROWS = 2000
"""Rows written per shape (the fastest by search-time median); a larger space says how many were left out."""

SCRIPT = r"""
for (const box of document.querySelectorAll('.configs-box')) {
  const table = box.querySelector('table.configs'), body = table.tBodies[0], heads = [...table.tHead.rows[0].cells];
  const text = box.querySelector('input.filter'), picks = [...box.querySelectorAll('select.pick')];
  const shown = box.querySelector('.shown');
  const value = (row, i) => {
    const cell = row.cells[i], v = cell.dataset.value;
    if (v === undefined) return cell.textContent;
    return v === '' ? Infinity : parseFloat(v);
  };
  heads.forEach((head, i) => {
    const sort = () => {
      const dir = head.dataset.sort === 'ascending' ? 'descending' : 'ascending';
      heads.forEach(h => { delete h.dataset.sort; h.removeAttribute('aria-sort'); });
      head.dataset.sort = dir; head.setAttribute('aria-sort', dir);
      const rows = [...body.rows].sort((a, b) => {
        const x = value(a, i), y = value(b, i);
        const c = typeof x === 'number' && typeof y === 'number' ? (x === y ? 0 : x < y ? -1 : 1)
          : String(x).localeCompare(String(y), undefined, {numeric: true});
        return dir === 'ascending' ? c : -c;
      });
      body.append(...rows);
    };
    head.addEventListener('click', sort);
    head.addEventListener('keydown', e => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(); } });
  });
  const column = Object.fromEntries(heads.map((h, i) => [h.dataset.name.toLowerCase(), i]));
  const filter = () => {
    const words = text.value.toLowerCase().split(/\s+/).filter(w => w);
    let n = 0;
    for (const row of body.rows) {
      const all = row.textContent.toLowerCase();
      const ok = words.every(w => {
        const [name, want] = w.split('=');
        if (want !== undefined && name in column) return row.cells[column[name]].textContent.toLowerCase() === want;
        return all.includes(w);
      }) && picks.every(p => !p.value || row.cells[column[p.name.toLowerCase()]].textContent === p.value);
      row.hidden = !ok;
      n += ok;
    }
    shown.textContent = n + ' of ' + body.rows.length + ' configs shown';
    table.dataset.shown = n;
  };
  text.addEventListener('input', filter);
  picks.forEach(p => p.addEventListener('change', filter));
  filter();
}
"""


def _ms(value: float | None) -> tuple[str, str]:
    """(data-value, text) of a time cell; an empty data-value sorts last."""
    return ("", "—") if value is None else (f"{value:.6g}", f"{value:.4g}")


def _timed(s: ShapeReport) -> list[Candidate]:
    return sorted(
        (c for c in s.all_candidates if c.role != "screen" and c.status == "ok" and c.measurement is not None),
        key=lambda c: c.measurement.median_ms if c.measurement else 0.0,
    )


def config_table(s: ShapeReport) -> str:
    """The shape's timed configs (search and baselines), fastest first, with filters above them."""
    timed = _timed(s)
    if not timed:
        return ""
    params = varying([(c.config.as_dict(), 0.0) for c in timed if c.role != "baseline"])
    names = list(dict.fromkeys(n for c in timed for n in c.config.as_dict()))
    winner = s.winner.id if s.winner else None
    heads = [*names, "median ms", "confirmed ms", "role"]
    head = "".join(
        f'<th scope="col" tabindex="0" data-name="{escape(h, quote=True)}" title="sort by {escape(h)}">{escape(h)}</th>'
        for h in heads
    )
    rows = []
    for c in timed[:MAX_ROWS]:
        config = c.config.as_dict()
        cells = [
            f'<td data-value="{escape(str(config[n]))}">{escape(str(config[n]))}</td>'
            if isinstance(config.get(n), (int, float)) and not isinstance(config.get(n), bool)
            else f"<td>{escape(str(config.get(n, '')))}</td>"
            for n in names
        ]
        for value in (
            c.measurement.median_ms if c.measurement else None,
            c.confirmed.median_ms if c.confirmed else None,
        ):
            data, text = _ms(value)
            cells.append(f'<td data-value="{data}">{text}</td>')
        role = "winner" if c.id == winner else (c.label or c.role if c.role == "baseline" else c.role)
        mark = ' class="winner"' if c.id == winner else ""
        rows.append(f"<tr{mark}>{''.join(cells)}<td>{escape(role)}</td></tr>")
    picks = "".join(
        f'<label>{escape(n)} <select class="pick" name="{escape(n, quote=True)}"><option value="">all</option>'
        + "".join(f'<option value="{escape(str(v), quote=True)}">{escape(str(v))}</option>' for v in values)
        + "</select></label> "
        for n, values in params.items()
    )
    left = f" (the fastest {MAX_ROWS} of {len(timed)})" if len(timed) > MAX_ROWS else ""
    return (
        f'<h3>Configs{escape(left)}</h3><div class="configs-box" data-shape="{escape(s.shape.key)}">'
        '<p class="filters"><label>filter <input class="filter" type="search" size="24" '
        f'placeholder="words, or NAME=VALUE"></label> {picks}<span class="shown"></span></p>'
        f'<table class="configs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )
