"""Render one EvalReceipt to a file; the format follows the extension (.html .svg .md .json)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from loomc.eval.receipt import EvalReceipt
from loomc.report import charts

FORMATS = (".html", ".svg", ".md", ".json")
BLANK = "—"


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


def usd(value: str | None) -> str:
    return BLANK if value is None else f"${float(value):.4f}"


def _env(autoescape: bool) -> Environment:
    env = Environment(
        loader=PackageLoader("loomc.report", "templates"),
        autoescape=select_autoescape(["html", "svg"]) if autoescape else False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fmt"] = fmt
    env.filters["usd"] = usd
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
    p = Path(path)
    ext = p.suffix.lower()
    if ext not in FORMATS:
        raise ReportError(f"{p}: unsupported report format '{ext}' (use {', '.join(FORMATS)})")
    p.write_text(render_text(receipt, ext), encoding="utf-8")
    return p
