"""Inline SVG charts (no JS, no external CSS) built from receipt metrics; unmeasured points are omitted."""

from __future__ import annotations

import re
from xml.sax.saxutils import escape as _xml_escape

from loomc.eval.metrics import StrategyMetrics

# Characters XML 1.0 forbids (C0 controls but tab/LF/CR, lone surrogates, U+FFFE/U+FFFF), plus
# the C1 controls and DEL: names come from users and datasets, and one of these makes an SVG
# unreadable (a lone surrogate cannot even be written as UTF-8).
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def escape(text: str) -> str:
    """Text for an SVG text node: XML-escaped, with forbidden characters shown as U+FFFD."""
    return _xml_escape(NOT_XML.sub("\ufffd", text))


COLOURS = ("#60a5fa", "#f87171", "#4ade80", "#fbbf24", "#a78bfa", "#22d3ee")


CHAR_W = 6.2  # approximate advance of an 11px sans-serif character
LABEL_H = 13.0

Box = tuple[float, float, float, float]  # x0, y0, x1, y1


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_box(x: float, y: float, text: str) -> Box:
    """The box a label occupies when its baseline starts at (x, y) (font-size 11)."""
    return (x, y - 10.0, x + CHAR_W * len(text), y + 3.0)


def place_labels(
    points: list[tuple[str, float, float]], width: int, height: int, top: float = 10.0
) -> list[tuple[float, float]]:
    """Baseline positions for each point's label, none overlapping another label.

    A label goes right of and above its point when that is free; otherwise the nearest free slot
    stepping down or up (then on the left), so strategies with equal cost and quality stay
    legible."""
    placed: list[Box] = []
    out: list[tuple[float, float]] = []
    for name, px, py in points:
        w = CHAR_W * len(name)
        chosen: tuple[float, float] | None = None
        for k in range(0, 2 * len(points) + 2):
            dy = (k + 1) // 2 * LABEL_H * (1 if k % 2 else -1) if k else 0.0
            for x in (px + 8, px - 8 - w):
                y = py - 6 + dy
                box = label_box(x, y, name)
                inside = box[0] >= 0 and box[2] <= width and box[1] >= top and box[3] <= height
                if inside and not any(_overlaps(box, b) for b in placed):
                    chosen = (x, y)
                    break
            if chosen is not None:
                break
        if chosen is None:  # more labels than room: stack below the last one
            last = max((b[3] for b in placed), default=py)
            chosen = (px + 8, last + 10)
        placed.append(label_box(chosen[0], chosen[1], name))
        out.append(chosen)
    return out


def cost_quality_scatter(
    metrics: list[StrategyMetrics], width: int = 480, height: int = 300
) -> str:
    """Quality against USD per run; only strategies with both numbers measured are plotted."""
    pts = [
        (m.strategy, float(m.avg_cost_usd), m.quality_mean)
        for m in metrics
        if m.avg_cost_usd is not None and m.quality_mean is not None
    ]
    left, right, top_y, bottom = 40.0, width - 10.0, 26.0, height - 30.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"><title>Cost vs quality</title>',
        f'<line x1="{left:.0f}" y1="{bottom:.0f}" x2="{right:.0f}" y2="{bottom:.0f}" stroke="#555"/>',
        f'<line x1="{left:.0f}" y1="{top_y:.0f}" x2="{left:.0f}" y2="{bottom:.0f}" stroke="#555"/>',
        f'<text x="{width // 2}" y="{height - 8}" font-size="11" text-anchor="middle">USD / run</text>',
        '<text x="4" y="12" font-size="11">quality</text>',
    ]
    for q in (0, 50, 100):
        y = bottom - (bottom - top_y) * q / 100
        parts.append(
            f'<text x="{left - 4:.0f}" y="{y + 4:.1f}" font-size="9" text-anchor="end">{q}</text>'
        )
    if not pts:
        parts.append('<text x="60" y="60" font-size="12">— no priced, scored strategy</text>')
        parts.append("</svg>")
        return "".join(parts)
    lo = min(c for _, c, _ in pts)
    hi = max(c for _, c, _ in pts)
    span = hi - lo
    inner_l, inner_r = left + 20, right - 110  # room for labels right of the last point

    def xpos(cost: float) -> float:
        if span <= 0:
            return (inner_l + inner_r) / 2  # equal costs: one column, labels stacked
        return inner_l + (inner_r - inner_l) * (cost - lo) / span

    if span <= 0:
        parts.append(
            f'<text x="{(inner_l + inner_r) / 2:.1f}" y="{bottom + 12:.0f}" font-size="9" '
            f'text-anchor="middle">all ${lo:.4f}</text>'
        )
    else:
        for cost in (lo, hi):
            parts.append(
                f'<text x="{xpos(cost):.1f}" y="{bottom + 12:.0f}" font-size="9" '
                f'text-anchor="middle">${cost:.4f}</text>'
            )
    coords = [(name, xpos(cost), bottom - (bottom - top_y) * q / 100) for name, cost, q in pts]
    labels = place_labels(coords, width, int(bottom), int(top_y))
    for i, ((name, x, y), (lx, ly)) in enumerate(zip(coords, labels, strict=True)):
        c = COLOURS[i % len(COLOURS)]
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{c}" fill-opacity="0.8"/>')
        if abs(ly - (y - 6)) > 1 or abs(lx - (x + 8)) > 1:  # displaced: a leader line
            ex = lx if lx > x else lx + CHAR_W * len(name)
            parts.append(
                f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{ex:.1f}" y2="{ly - 4:.1f}" '
                f'stroke="{c}" stroke-width="0.8"/>'
            )
        parts.append(
            f'<text class="label" x="{lx:.1f}" y="{ly:.1f}" font-size="11" '
            f'fill="{c}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def calls_bars(metrics: list[StrategyMetrics], width: int = 480, bar_h: int = 22) -> str:
    rows = [m for m in metrics if m.avg_calls is not None]
    height = 20 + bar_h * max(len(rows), 1) + 10
    top = max((m.avg_calls or 0.0 for m in rows), default=1.0) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"><title>Average calls per strategy</title>'
    ]
    for i, m in enumerate(rows):
        y = 10 + i * bar_h
        w = (width - 200) * (m.avg_calls or 0.0) / top
        c = COLOURS[i % len(COLOURS)]
        parts.append(f'<text x="4" y="{y + 15}" font-size="11">{escape(m.strategy)}</text>')
        parts.append(f'<rect x="150" y="{y + 3}" width="{w:.1f}" height="{bar_h - 6}" fill="{c}"/>')
        parts.append(
            f'<text x="{155 + w:.1f}" y="{y + 15}" font-size="11">{m.avg_calls:.2f}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
