"""Charts as inline SVG text, for ``kerntune report`` and the web page: no script, no network, no plotting
library; type is 13px or larger. Every mark carries the number it draws as a ``data-`` attribute (``data-ms``,
``data-median-ms``, ...), so a test — or a reader's browser tools — can check a chart against the store, and
labels are escaped (a config string is data, never markup).

- ``distributions``: each candidate's raw samples as dots on one row, its median as a bar: the spread a median
  hides.
- ``trace``: best median so far against evaluations or seconds (a step line), every evaluation as a faint dot.
- ``pairs``: finalists' search-time median beside their confirmed (fresh-process) median.
- ``roofline``: candidates at their arithmetic intensity against the calibrated ceilings, log-log.
- ``parameters``: every timed config's median against each parameter's values, most important parameter first.
- ``contour``: the best median at each pair of two parameters' values, a grid of coloured cells.

Time axes go logarithmic where the times span a decade or more; tick labels never print over each other (one
without room is left out) and the unit is written once per axis; a single evaluation is drawn as a point.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

WIDTH, ROW, LEFT, PAD = 720, 26, 230, 18
MAX_DOTS = 400
"""Samples drawn per row (evenly thinned beyond this; the median and n are the full set's)."""


def _num(value: float) -> str:
    return f"{value:.6g}"


def _svg(height: float, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{WIDTH}" '
        f'height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}"><title>{escape(title)}</title>'
        + "".join(body)
        + "</svg>"
    )


LABEL_GAP = 64.0
"""The least horizontal room between two tick labels (px): a tick whose label would overlap another's is dropped."""


def wants_log(values: Sequence[float]) -> bool:
    """A log axis where positive values span a decade or more (1.7 to 30 ms on a linear axis squeezes every good
    config against the left edge)."""
    return bool(values) and min(values) > 0 and max(values) / min(values) >= 10


def _axis(low: float, high: float, y: float, unit: str, data: tuple[float, float], log: bool = False) -> list[str]:
    """A horizontal axis from LEFT to WIDTH - PAD over the scale [low, high], ticked at the data's lowest, middle
    and highest values (each value once; a label with no room beside the previous one is left out), the unit
    written once under its right end."""
    out = [f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - PAD}" y2="{y}" stroke="#888"/>']
    first, last = data
    middle = math.sqrt(first * last) if log and first > 0 else (first + last) / 2
    kept: list[float] = []
    for value, anchor in ((first, "start"), (middle, "middle"), (last, "end")):
        x = _x(value, low, high, log)
        if any(abs(x - other) < LABEL_GAP for other in kept):
            continue
        kept.append(x)
        out.append(
            f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#888"/><text class="tick" '
            f'x="{x:.1f}" y="{y + 15}" font-size="13" text-anchor="{anchor}">{value:.4g}</text>'
        )
    scale = ", log scale" if log else ""
    out.append(
        f'<text class="unit" x="{WIDTH - PAD}" y="{y + 28}" font-size="13" text-anchor="end" fill="#555">'
        f"{escape(unit)}{scale}</text>"
    )
    return out


def _scale(low: float, high: float, log: bool = False) -> tuple[float, float]:
    if log:
        low, high = max(low, 1e-30), max(high, 1e-30)
    if high <= low:
        return (low / 2, low * 2) if log else (low - 1 if low else -1.0, low + 1 if low else 1.0)
    pad = (high / low) ** 0.05 if log else (high - low) * 0.05
    return (low / pad, high * pad) if log else (low - pad, high + pad)


def _x(value: float, low: float, high: float, log: bool = False) -> float:
    frac = (math.log(value / low) / math.log(high / low)) if log else (value - low) / (high - low)
    return LEFT + frac * (WIDTH - PAD - LEFT)


def _strip(
    attrs: str,
    label: str,
    values: Sequence[float],
    mark: float,
    mark_class: str,
    y: float,
    scale: tuple[float, float, bool],
) -> str:
    """One labelled row of a strip chart: each value a dot (evenly thinned beyond MAX_DOTS), ``mark`` (a median or
    a best) a bar; ``attrs`` the group's class and data- attributes (already escaped)."""
    low, high, log = scale
    step = max(1, math.ceil(len(values) / MAX_DOTS))
    dots = "".join(
        f'<circle cx="{_x(v, low, high, log):.1f}" cy="{y:.1f}" r="2" fill="#4477aa" fill-opacity="0.45" '
        f'data-ms="{_num(v)}"/>'
        for v in list(values)[::step]
    )
    mx = _x(mark, low, high, log)
    return (
        f'<g {attrs}><text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="13" text-anchor="end">{escape(label[:30])}'
        f'</text>{dots}<line class="{mark_class}" x1="{mx:.1f}" y1="{y - 9:.1f}" x2="{mx:.1f}" y2="{y + 9:.1f}" '
        'stroke="#cc3311" stroke-width="2"/></g>'
    )


def distributions(rows: Sequence[tuple[str, Sequence[float], float]], title: str = "samples") -> str:
    """One row per (label, samples in ms, median in ms)."""
    values = [v for _, samples, _ in rows for v in samples]
    if not values:
        return ""
    log = wants_log(values)
    low, high = _scale(min(values), max(values), log)
    body = []
    for i, (label, samples, median) in enumerate(rows):
        body.append(
            _strip(
                f'class="series" data-label="{escape(label)}" data-median-ms="{_num(median)}" data-n="{len(samples)}"',
                label,
                samples,
                median,
                "median",
                PAD + i * ROW + ROW / 2,
                (low, high, log),
            )
        )
    height = PAD + len(rows) * ROW + 44
    return _svg(height, [*body, *_axis(low, high, height - 40, "ms", (min(values), max(values)), log)], title)


def trace(points: Sequence[tuple[float, float]], x_unit: str, title: str = "search trace") -> str:
    """(x, median ms) per evaluation in order: a step line of the best so far, every evaluation a faint dot."""
    if not points:
        return ""
    if len(points) == 1:  # one evaluation: the point and its value, not an empty frame around one dot
        x, v = points[0]
        return _svg(
            34.0,
            [
                f'<circle class="evaluation best" cx="{LEFT}" cy="17" r="3.5" fill="#cc3311" '
                f'data-x="{_num(x)}" data-ms="{_num(v)}"/><text x="{LEFT + 10}" y="21" font-size="13">'
                f"one evaluation: {_num(v)} ms (at {_num(x)} {escape(x_unit)})</text>"
            ],
            title,
        )
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    xlow, xhigh = _scale(min(xs), max(xs))
    log = wants_log(ys)
    ylow, yhigh = _scale(min(ys), max(ys), log)
    height, top = 252.0, 12.0

    def y_of(v: float) -> float:
        frac = math.log(v / ylow) / math.log(yhigh / ylow) if log else (v - ylow) / (yhigh - ylow)
        return top + (1 - frac) * (height - 62 - top)

    best, path, marks = math.inf, "", []
    for x, v in points:
        px, py = _x(x, xlow, xhigh), y_of(v)
        marks.append(
            f'<circle class="evaluation" cx="{px:.1f}" cy="{py:.1f}" r="2" fill="#999" '
            f'data-x="{_num(x)}" data-ms="{_num(v)}"/>'
        )
        if v < best:  # a new best: the step line moves right to here, then down to it
            best = v
            path += f"M{px:.1f} {py:.1f}" if not path else f"H{px:.1f}V{py:.1f}"
            marks.append(
                f'<circle class="best" cx="{px:.1f}" cy="{py:.1f}" r="3" fill="#cc3311" '
                f'data-x="{_num(x)}" data-ms="{_num(v)}"/>'
            )
    path += f"H{_x(xs[-1], xlow, xhigh):.1f}"
    ends = sorted({min(ys), max(ys)})
    if len(ends) == 2 and abs(y_of(ends[0]) - y_of(ends[1])) < 14:  # two labels that would print over each other
        ends = ends[:1]
    labels = [
        f'<text class="tick" x="{LEFT - 6}" y="{y_of(v) + 4:.1f}" font-size="13" text-anchor="end">{_num(v)} ms</text>'
        for v in ends
    ]
    if log:
        labels.append(
            f'<text class="unit" x="{LEFT - 6}" y="{top + 4:.1f}" font-size="13" text-anchor="end" '
            'fill="#555">log scale</text>'
        )
    line = f'<path class="best-so-far" d="{path}" fill="none" stroke="#cc3311" stroke-width="1.5"/>'
    return _svg(height, [*marks, line, *labels, *_axis(xlow, xhigh, height - 44, x_unit, (min(xs), max(xs)))], title)


def pairs(rows: Sequence[tuple[str, float, float | None]], title: str = "search vs confirmed") -> str:
    """(label, search-time median ms, confirmed median ms or None): two bars a row."""
    values = [v for _, a, b in rows for v in (a, b) if v is not None]
    if not values:
        return ""
    high = max(values) * 1.05
    body = []
    for i, (label, search, confirmed) in enumerate(rows):
        y = PAD + i * ROW
        bars = [("search", search, "#4477aa", 0), ("confirmed", confirmed, "#228833", 10)]
        marks = "".join(
            f'<rect class="{kind}" x="{LEFT}" y="{y + dy:.1f}" width="{_x(v, 0, high) - LEFT:.1f}" '
            f'height="9" fill="{color}" data-ms="{_num(v)}"/>'
            for kind, v, color, dy in bars
            if v is not None
        )
        body.append(
            f'<g class="pair" data-label="{escape(label)}"><text x="{LEFT - 6}" y="{y + 13:.1f}" '
            f'font-size="13" text-anchor="end">{escape(label[:30])}</text>{marks}</g>'
        )
    height = PAD + len(rows) * ROW + 44
    legend = (
        '<rect x="8" y="4" width="10" height="8" fill="#4477aa"/><text x="22" y="12" font-size="13">search'
        '</text><rect x="80" y="4" width="10" height="8" fill="#228833"/><text x="94" y="12" font-size="13">'
        "confirmed (fresh processes)</text>"
    )
    return _svg(height, [legend, *body, *_axis(0.0, high, height - 40, "ms", (0.0, max(values)))], title)


def roofline(
    points: Sequence[dict[str, float | str | bool]],
    roofs: dict[str, float],
    copy_bytes_per_s: float,
    title: str = "roofline",
) -> str:
    """``points`` as ``roofline.roofline_points`` gives them; ``roofs`` the compute ceilings (FLOP/s) by name."""
    if not points or not roofs or copy_bytes_per_s <= 0:
        return ""
    xs = [float(p["intensity"]) for p in points]
    top = max(roofs.values())
    xlow, xhigh = _scale(
        min(min(xs) / 4, min(roofs.values()) / copy_bytes_per_s / 8),
        max(max(xs) * 4, top / copy_bytes_per_s * 4),
        log=True,
    )
    ylow, yhigh = _scale(min(float(p["flops_per_s"]) for p in points) / 4, top * 1.5, log=True)
    height, y0 = 312.0, 12.0

    def y_of(v: float) -> float:
        return y0 + (1 - math.log(v / ylow) / math.log(yhigh / ylow)) * (height - 62 - y0)

    body = []
    for name, rate in roofs.items():
        knee = rate / copy_bytes_per_s
        left_y = max(copy_bytes_per_s * xlow, ylow)
        body.append(
            f'<path class="ceiling" data-name="{escape(name)}" data-flops-per-s="{_num(rate)}" '
            f'd="M{_x(xlow, xlow, xhigh, True):.1f} {y_of(left_y):.1f} L{_x(knee, xlow, xhigh, True):.1f} '
            f'{y_of(rate):.1f} H{WIDTH - PAD}" fill="none" stroke="#333" stroke-dasharray="4 2"/>'
            f'<text x="{WIDTH - PAD}" y="{y_of(rate) - 4:.1f}" font-size="13" text-anchor="end">'
            f"{escape(name)} {rate / 1e12:.3g} TFLOP/s</text>"
        )
    for p in points:
        color = "#cc3311" if p.get("winner") else ("#228833" if p.get("role") == "baseline" else "#4477aa")
        body.append(
            f'<circle class="point" cx="{_x(float(p["intensity"]), xlow, xhigh, True):.1f}" '
            f'cy="{y_of(float(p["flops_per_s"])):.1f}" r="3.5" fill="{color}" '
            f'data-label="{escape(str(p["label"]))}" data-median-ms="{_num(float(p["median_ms"]))}" '
            f'data-flops-per-s="{_num(float(p["flops_per_s"]))}"/>'
        )
    return _svg(height, [*body, *_axis(xlow, xhigh, height - 44, "FLOP/B", (min(xs), max(xs)), log=True)], title)


def parameters(
    rows: Sequence[tuple[Mapping[str, Any], float]],
    params: Mapping[str, Sequence[Any]],
    importance: Mapping[str, float] | None,
    title: str = "time by parameter",
) -> str:
    """Time against each parameter's values: per parameter that varies (most important first when ``importance``
    says), one row per value with every timed config's median at that value as a dot and the value's best as a
    bar — the view that shows which parameter moved the time. ``rows``: (config, median ms)."""
    times = [ms for _, ms in rows]
    if not times or not params:
        return ""
    log = wants_log(times)
    low, high = _scale(min(times), max(times), log)
    order = sorted(params, key=lambda n: -(importance or {}).get(n, 0.0)) if importance else list(params)
    body: list[str] = []
    y = float(PAD)
    for name in order:
        score = f" — importance {importance[name]:.2f}" if importance and name in importance else ""
        body.append(
            f'<text class="parameter" x="8" y="{y + 4:.1f}" font-size="13" font-weight="bold" '
            f'data-parameter="{escape(name)}">{escape(name)}{escape(score)}</text>'
        )
        y += ROW * 0.8
        for value in params[name]:
            mine = [ms for config, ms in rows if config.get(name) == value]
            if not mine:
                continue
            body.append(
                _strip(
                    f'class="value" data-parameter="{escape(name)}" data-value="{escape(str(value))}" '
                    f'data-best-ms="{_num(min(mine))}" data-n="{len(mine)}"',
                    f"{name} = {value}",
                    mine,
                    min(mine),
                    "best",
                    y,
                    (low, high, log),
                )
            )
            y += ROW
    height = y + 44
    return _svg(height, [*body, *_axis(low, high, height - 40, "ms", (min(times), max(times)), log)], title)


STOPS = ((0.0, (68, 1, 84)), (0.33, (59, 82, 139)), (0.66, (33, 145, 140)), (1.0, (253, 231, 37)))
"""Viridis, from dark (fastest) to yellow (slowest): ordered in lightness, readable by the colour-blind."""


def _colour(frac: float) -> str:
    for (f0, c0), (f1, c1) in itertools.pairwise(STOPS):
        if frac <= f1:
            t = (frac - f0) / (f1 - f0)
            r, g, b = (round(a + (z - a) * t) for a, z in zip(c0, c1, strict=True))
            return f"#{r:02x}{g:02x}{b:02x}"
    return "#fde725"


def contour(
    rows: Sequence[tuple[Mapping[str, Any], float]],
    x: tuple[str, Sequence[Any]],
    y: tuple[str, Sequence[Any]],
    title: str = "two parameters",
    winner: Mapping[str, Any] | None = None,
) -> str:
    """The best median at each pair of two parameters' values, as a grid of coloured cells (dark: fast), each
    with its time written in it where there is room; a pair no timed config had is left grey. The ``winner``'s
    cell is outlined (it was picked by the confirmation rounds, so it need not hold the lowest search-time
    median). ``rows``: (config, median ms); ``x`` and ``y``: (parameter, its values in order)."""
    (xn, xs), (yn, ys) = x, y
    best: dict[tuple[str, str], float] = {}
    for config, ms in rows:
        if xn in config and yn in config:
            key = (str(config[xn]), str(config[yn]))
            best[key] = min(ms, best.get(key, math.inf))
    if not best or not xs or not ys:
        return ""
    log = wants_log(list(best.values()))
    low, high = min(best.values()), max(best.values())
    left, top, cell_h = 150.0, 34.0, 30.0
    cell_w = (WIDTH - PAD - left) / len(xs)
    body = [
        f'<text x="{left + (WIDTH - PAD - left) / 2:.1f}" y="16" font-size="13" font-weight="bold" '
        f'text-anchor="middle">{escape(xn)} →</text>',
        f'<text x="8" y="{top - 6:.1f}" font-size="13" font-weight="bold">{escape(yn[:18])} ↓</text>',
    ]
    for i, xv in enumerate(xs):
        body.append(
            f'<text class="tick" x="{left + (i + 0.5) * cell_w:.1f}" y="{top - 6:.1f}" font-size="13" '
            f'text-anchor="middle">{escape(str(xv)[:10])}</text>'
        )
    for j, yv in enumerate(ys):
        cy = top + j * cell_h
        body.append(
            f'<text class="tick" x="{left - 8}" y="{cy + cell_h / 2 + 5:.1f}" font-size="13" '
            f'text-anchor="end">{escape(str(yv)[:16])}</text>'
        )
        for i, xv in enumerate(xs):
            found = best.get((str(xv), str(yv)))
            cx = left + i * cell_w
            if found is None:
                body.append(
                    f'<rect class="empty" x="{cx:.1f}" y="{cy:.1f}" width="{cell_w - 2:.1f}" '
                    f'height="{cell_h - 2:.1f}" fill="#eee"/>'
                )
                continue
            ms = found
            span = (math.log(high / low) if log else high - low) or 1.0
            frac = (math.log(ms / low) if log else ms - low) / span
            won = winner is not None and (str(winner.get(xn)), str(winner.get(yn))) == (str(xv), str(yv))
            outline = ' stroke="#cc3311" stroke-width="3"' if won else ""
            body.append(
                f'<rect class="cell" x="{cx:.1f}" y="{cy:.1f}" width="{cell_w - 2:.1f}" height="{cell_h - 2:.1f}" '
                f'fill="{_colour(frac)}"{outline} data-x="{escape(str(xv))}" data-y="{escape(str(yv))}" '
                f'data-ms="{_num(ms)}"><title>{escape(f"{xn}={xv}, {yn}={yv}: {ms:.4g} ms")}</title></rect>'
            )
            if cell_w >= 52:
                ink = "#000" if frac > 0.55 else "#fff"
                body.append(
                    f'<text x="{cx + cell_w / 2 - 1:.1f}" y="{cy + cell_h / 2 + 4:.1f}" font-size="13" '
                    f'text-anchor="middle" fill="{ink}" pointer-events="none">{ms:.3g}</text>'
                )
    height = top + len(ys) * cell_h + 48
    scale = ", log colour scale" if log else ""
    for k, line in enumerate(
        (
            f"best search-time median at each pair: {low:.4g} to {high:.4g} ms{scale} (dark: fast)",
            "red outline: the winner; grey: a pair not timed",
        )
    ):
        body.append(
            f'<text class="unit" x="{left}" y="{height - 26 + 16 * k:.1f}" font-size="13" fill="#555">'
            f"{escape(line)}</text>"
        )
    return _svg(height, body, title)
