"""Charts as inline SVG text, for ``kerntune report`` and the web page: no script, no network, no plotting
library. Every mark carries the number it draws as a ``data-`` attribute (``data-ms``, ``data-median-ms``, ...),
so a test — or a reader's browser tools — can check a chart against the store, and labels are escaped (a config
string is data, never markup).

- ``distributions``: each candidate's raw samples as dots on one row, its median as a bar: the spread a median
  hides.
- ``trace``: best median so far against evaluations or seconds (a step line), every evaluation as a faint dot.
- ``pairs``: finalists' search-time median beside their confirmed (fresh-process) median.
- ``roofline``: candidates at their arithmetic intensity against the calibrated ceilings, log-log.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

WIDTH, ROW, LEFT, PAD = 720, 26, 230, 18
MAX_DOTS = 400
"""Samples drawn per row (evenly thinned beyond this; the median and n are the full set's)."""


def _num(value: float) -> str:
    return f"{value:.6g}"


def _svg(height: float, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{WIDTH}" '
            f'height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}"><title>{escape(title)}</title>'
            + "".join(body) + "</svg>")


def _axis(low: float, high: float, y: float, unit: str, data: tuple[float, float], log: bool = False) -> list[str]:
    """A horizontal axis from LEFT to WIDTH - PAD over the scale [low, high], ticked at the data's lowest,
    middle and highest values."""
    out = [f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - PAD}" y2="{y}" stroke="#888"/>']
    first, last = data
    middle = math.sqrt(first * last) if log and first > 0 else (first + last) / 2
    for value, anchor in ((first, "start"), (middle, "middle"), (last, "end")):
        x = _x(value, low, high, log)
        out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#888"/><text x="{x:.1f}" '
                   f'y="{y + 15}" font-size="11" text-anchor="{anchor}">{value:.4g} {escape(unit)}</text>')
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


def distributions(rows: Sequence[tuple[str, Sequence[float], float]], title: str = "samples") -> str:
    """One row per (label, samples in ms, median in ms)."""
    values = [v for _, samples, _ in rows for v in samples]
    if not values:
        return ""
    low, high = _scale(min(values), max(values))
    body = []
    for i, (label, samples, median) in enumerate(rows):
        y = PAD + i * ROW + ROW / 2
        step = max(1, math.ceil(len(samples) / MAX_DOTS))
        dots = "".join(f'<circle cx="{_x(v, low, high):.1f}" cy="{y:.1f}" r="2" fill="#4477aa" fill-opacity="0.45" '
                       f'data-ms="{_num(v)}"/>' for v in list(samples)[::step])
        mx = _x(median, low, high)
        body.append(f'<g class="series" data-label="{escape(label)}" data-median-ms="{_num(median)}" '
                    f'data-n="{len(samples)}"><text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="11" '
                    f'text-anchor="end">{escape(label[:34])}</text>{dots}<line class="median" x1="{mx:.1f}" '
                    f'y1="{y - 9:.1f}" x2="{mx:.1f}" y2="{y + 9:.1f}" stroke="#cc3311" stroke-width="2"/></g>')
    height = PAD + len(rows) * ROW + 30
    return _svg(height, [*body, *_axis(low, high, height - 28, "ms", (min(values), max(values)))], title)


def trace(points: Sequence[tuple[float, float]], x_unit: str, title: str = "search trace") -> str:
    """(x, median ms) per evaluation in order: a step line of the best so far, every evaluation a faint dot."""
    if not points:
        return ""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    xlow, xhigh = _scale(min(xs), max(xs))
    ylow, yhigh = _scale(min(ys), max(ys))
    height, top = 240.0, 12.0

    def y_of(v: float) -> float:
        return top + (1 - (v - ylow) / (yhigh - ylow)) * (height - 50 - top)

    best, path, marks = math.inf, "", []
    for x, v in points:
        px, py = _x(x, xlow, xhigh), y_of(v)
        marks.append(f'<circle class="evaluation" cx="{px:.1f}" cy="{py:.1f}" r="2" fill="#999" '
                     f'data-x="{_num(x)}" data-ms="{_num(v)}"/>')
        if v < best:  # a new best: the step line moves right to here, then down to it
            best = v
            path += f"M{px:.1f} {py:.1f}" if not path else f"H{px:.1f}V{py:.1f}"
            marks.append(f'<circle class="best" cx="{px:.1f}" cy="{py:.1f}" r="3" fill="#cc3311" '
                         f'data-x="{_num(x)}" data-ms="{_num(v)}"/>')
    path += f"H{_x(xs[-1], xlow, xhigh):.1f}"
    labels = [f'<text x="{LEFT - 6}" y="{y_of(v) + 4:.1f}" font-size="11" text-anchor="end">{_num(v)} ms</text>'
              for v in (min(ys), max(ys))]
    line = f'<path class="best-so-far" d="{path}" fill="none" stroke="#cc3311" stroke-width="1.5"/>'
    return _svg(height, [*marks, line, *labels, *_axis(xlow, xhigh, height - 32, x_unit, (min(xs), max(xs)))],
                title)


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
        marks = "".join(f'<rect class="{kind}" x="{LEFT}" y="{y + dy:.1f}" width="{_x(v, 0, high) - LEFT:.1f}" '
                        f'height="9" fill="{color}" data-ms="{_num(v)}"/>' for kind, v, color, dy in bars
                        if v is not None)
        body.append(f'<g class="pair" data-label="{escape(label)}"><text x="{LEFT - 6}" y="{y + 13:.1f}" '
                    f'font-size="11" text-anchor="end">{escape(label[:34])}</text>{marks}</g>')
    height = PAD + len(rows) * ROW + 30
    legend = ('<rect x="8" y="4" width="10" height="8" fill="#4477aa"/><text x="22" y="12" font-size="11">search'
              '</text><rect x="80" y="4" width="10" height="8" fill="#228833"/><text x="94" y="12" font-size="11">'
              "confirmed (fresh processes)</text>")
    return _svg(height, [legend, *body, *_axis(0.0, high, height - 28, "ms", (0.0, max(values)))], title)


def roofline(points: Sequence[dict[str, float | str | bool]], roofs: dict[str, float], copy_bytes_per_s: float,
             title: str = "roofline") -> str:
    """``points`` as ``roofline.roofline_points`` gives them; ``roofs`` the compute ceilings (FLOP/s) by name."""
    if not points or not roofs or copy_bytes_per_s <= 0:
        return ""
    xs = [float(p["intensity"]) for p in points]
    top = max(roofs.values())
    xlow, xhigh = _scale(min(min(xs) / 4, min(roofs.values()) / copy_bytes_per_s / 8),
                         max(max(xs) * 4, top / copy_bytes_per_s * 4), log=True)
    ylow, yhigh = _scale(min(float(p["flops_per_s"]) for p in points) / 4, top * 1.5, log=True)
    height, y0 = 300.0, 12.0

    def y_of(v: float) -> float:
        return y0 + (1 - math.log(v / ylow) / math.log(yhigh / ylow)) * (height - 50 - y0)

    body = []
    for name, rate in roofs.items():
        knee = rate / copy_bytes_per_s
        left_y = max(copy_bytes_per_s * xlow, ylow)
        body.append(f'<path class="ceiling" data-name="{escape(name)}" data-flops-per-s="{_num(rate)}" '
                    f'd="M{_x(xlow, xlow, xhigh, True):.1f} {y_of(left_y):.1f} L{_x(knee, xlow, xhigh, True):.1f} '
                    f'{y_of(rate):.1f} H{WIDTH - PAD}" fill="none" stroke="#333" stroke-dasharray="4 2"/>'
                    f'<text x="{WIDTH - PAD}" y="{y_of(rate) - 4:.1f}" font-size="11" text-anchor="end">'
                    f"{escape(name)} {rate / 1e12:.3g} TFLOP/s</text>")
    for p in points:
        color = "#cc3311" if p.get("winner") else ("#228833" if p.get("role") == "baseline" else "#4477aa")
        body.append(f'<circle class="point" cx="{_x(float(p["intensity"]), xlow, xhigh, True):.1f}" '
                    f'cy="{y_of(float(p["flops_per_s"])):.1f}" r="3.5" fill="{color}" '
                    f'data-label="{escape(str(p["label"]))}" data-median-ms="{_num(float(p["median_ms"]))}" '
                    f'data-flops-per-s="{_num(float(p["flops_per_s"]))}"/>')
    return _svg(height, [*body, *_axis(xlow, xhigh, height - 32, "FLOP/B", (min(xs), max(xs)), log=True)], title)
