"""Render one EvalReceipt to a file; the format follows the extension (.html .svg .md .json)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader
from markupsafe import Markup
from pydantic_core import PydanticSerializationError

from loomc.eval.metrics import StrategyMetrics
from loomc.eval.receipt import EvalReceipt, receipt_json
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


def ci(value: tuple[float, float] | None, point: object, digits: int = 1, pct: bool = False) -> str:
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


# Markdown that a viewer would turn into markup or that would break a table row.
_SURROGATE = re.compile("[\ud800-\udfff]")
_MD_SPECIAL = re.compile(r"([\\`*|\[\]])")


def xml_text(value: object) -> object:
    """Every value a template prints, made representable in XML and UTF-8 (U+FFFD for the rest).

    Runs before autoescaping (Jinja's ``finalize``), so it sees raw strings; ``Markup`` (the
    charts, which escape their own text) passes through."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return charts.NOT_XML.sub("\ufffd", value)


def md_text(value: object) -> object:
    """Untrusted text in the Markdown table: no raw HTML, no table breaks, no markup, one line."""
    clean = xml_text(value)
    if not isinstance(clean, str):
        return clean
    one_line = clean.replace("\r", " ").replace("\n", " ")
    entities = one_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", entities)


def _env(markup: bool) -> Environment:
    """HTML and SVG autoescape every expression (the template names end in ``.j2``, so
    ``select_autoescape`` by extension would never match them); Markdown escapes its own way."""
    env = Environment(
        loader=PackageLoader("loomc.report", "templates"),
        autoescape=markup,
        finalize=xml_text,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fmt"] = fmt
    env.filters["ci"] = ci
    env.filters["usd"] = usd
    env.filters["markers"] = markers
    env.filters["md"] = md_text
    return env


def render_text(receipt: EvalReceipt, fmt_ext: str) -> str:
    if fmt_ext == ".json":
        try:
            return receipt.model_dump_json(indent=2) + "\n"
        except PydanticSerializationError:  # a lone surrogate from a model or a dataset
            clean = EvalReceipt.model_validate(_scrub(receipt.model_dump()))
            return clean.model_dump_json(indent=2) + "\n"
    if fmt_ext == ".md":
        return _env(False).get_template("report.md.j2").render(r=receipt)
    ctx = {
        "r": receipt,
        "scatter": Markup(charts.cost_quality_scatter(receipt.metrics)),
        "bars": Markup(charts.calls_bars(receipt.metrics)),
    }
    name = "report.html.j2" if fmt_ext == ".html" else "card.svg.j2"
    return _env(True).get_template(name).render(**ctx)


def _scrub(value: Any) -> Any:
    """``value`` with every lone surrogate shown as U+FFFD: JSON cannot carry one (a reader
    rejects it), and the receipt must load back."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def render(receipt: EvalReceipt, path: str | Path) -> Path:
    """Write ``receipt`` to ``path`` in the format its extension names (.html dashboard, .svg
    card, .md table, .json receipt); returns the path. Raises ``ReportError`` otherwise."""
    p = Path(path)
    ext = p.suffix.lower()
    if ext not in FORMATS:
        raise ReportError(f"{p}: unsupported report format '{ext}' (use {', '.join(FORMATS)})")
    if ext == ".json":  # run by run: the receipt of a large eval never sits in memory whole
        with p.open("w", encoding="utf-8") as out:
            try:
                out.writelines(receipt_json(receipt))
                out.write("\n")
                return p
            except PydanticSerializationError:  # a lone surrogate: the scrubbed receipt
                out.seek(0)
                out.truncate()
    p.write_text(render_text(receipt, ext), encoding="utf-8")
    return p
