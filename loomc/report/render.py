"""Render one EvalReceipt to a file; the format follows the extension (.html .svg .md .json)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from loomc.eval.metrics import StrategyMetrics
from loomc.eval.receipt import EvalReceipt
from loomc.report import charts

FORMATS = (".html", ".svg", ".md", ".json")
BLANK = "—"  # not measured
NA = "n/a"  # measured, but an interval needs at least two samples


class ReportError(Exception):
    """An unsupported output path; one line for the user."""


def fmt(value: object, digits: int = 1, pct: bool = False) -> str:
    """Unmeasured values (None) render as a dash, never as 0."""
    if value is None:
        return BLANK
    if isinstance(value, tuple):
        return f"[{fmt(value[0], digits, pct)}, {fmt(value[1], digits, pct)}]"
    if isinstance(value, float | int):
        return f"{value * 100:.{digits}f}%" if pct else f"{value:.{digits}f}"
    return str(value)


def ci(value: tuple[float, float] | None, point: object, digits: int = 1,
       pct: bool = False) -> str:
    """An interval beside its point estimate: blank when the point is blank, n/a when the point
    was measured but the interval could not be (fewer than two samples), never [0, 0]."""
    if point is None:
        return BLANK
    if value is None:
        return NA
    return fmt(value, digits, pct)


def usd(value: str | None) -> str:
    return BLANK if value is None else f"${float(value):.4f}"


def markers(m: StrategyMetrics) -> str:
    """Footnote marks for a strategy row: ¹ unpriced, ² checks-only quality, ³ judge errors."""
    out = ""
    if m.quality_source in ("checks", "mixed"):
        out += "²"
    if m.judge_errors or m.judge_pending:
        out += "³"
    return out


def _env(autoescape: bool) -> Environment:
    env = Environment(
        loader=PackageLoader("loomc.report", "templates"),
        autoescape=select_autoescape(["html", "svg"]) if autoescape else False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fmt"] = fmt
    env.filters["ci"] = ci
    env.filters["usd"] = usd
    env.filters["markers"] = markers
    return env


def render_text(receipt: EvalReceipt, fmt_ext: str) -> str:
    if fmt_ext == ".json":
        return receipt.model_dump_json(indent=2) + "\n"
    if fmt_ext == ".md":
        return _env(False).get_template("report.md.j2").render(r=receipt)
    ctx = {
        "r": receipt,
        "scatter": Markup(charts.cost_quality_scatter(receipt.metrics)),
        "bars": Markup(charts.calls_bars(receipt.metrics)),
    }
    name = "report.html.j2" if fmt_ext == ".html" else "card.svg.j2"
    return _env(True).get_template(name).render(**ctx)


def render(receipt: EvalReceipt, path: str | Path) -> Path:
    """Write ``receipt`` to ``path`` in the format its extension names (.html dashboard, .svg
    card, .md table, .json receipt); returns the path. Raises ``ReportError`` otherwise."""
    p = Path(path)
    ext = p.suffix.lower()
    if ext not in FORMATS:
        raise ReportError(f"{p}: unsupported report format '{ext}' (use {', '.join(FORMATS)})")
    p.write_text(render_text(receipt, ext), encoding="utf-8")
    return p
