"""Inline SVG charts (no JS, no external CSS) built from receipt metrics; unmeasured points are omitted."""

from __future__ import annotations

from xml.sax.saxutils import escape

from loomc.eval.metrics import StrategyMetrics

COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2")


def cost_quality_scatter(
    metrics: list[StrategyMetrics], width: int = 480, height: int = 300
) -> str:
    pts = [
        (m.strategy, float(m.avg_cost_usd), m.quality_mean)
        for m in metrics
        if m.avg_cost_usd is not None and m.quality_mean is not None
    ]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"><title>Cost vs quality</title>',
        f'<line x1="40" y1="{height - 30}" x2="{width - 10}" y2="{height - 30}" stroke="#555"/>',
        f'<line x1="40" y1="10" x2="40" y2="{height - 30}" stroke="#555"/>',
        f'<text x="{width // 2}" y="{height - 8}" font-size="11" text-anchor="middle">USD / run</text>',
        '<text x="12" y="20" font-size="11">quality</text>',
    ]
    if not pts:
        parts.append('<text x="60" y="60" font-size="12">— no priced, scored strategy</text>')
    top = max((c for _, c, _ in pts), default=1.0) or 1.0
    for i, (name, cost, q) in enumerate(pts):
        x = 40 + (width - 60) * cost / top
        y = (height - 30) - (height - 50) * q / 100
        c = COLOURS[i % len(COLOURS)]
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{c}"/>')
        parts.append(f'<text x="{x + 8:.1f}" y="{y - 6:.1f}" font-size="11">{escape(name)}</text>')
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
