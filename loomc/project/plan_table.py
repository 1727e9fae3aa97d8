"""The worst-case table: one row per policy x pipeline x tier, with ceilings beside worst cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loomc.project.checking import CheckResult
from loomc.units import Dimension, format_quantity

_DIMS = (Dimension.CALLS, Dimension.TOKENS, Dimension.CREDITS, Dimension.COST, Dimension.LATENCY)


def plan_rows(result: CheckResult) -> list[dict[str, Any]]:
    rows = []
    for policy, pipeline, wc in result.worst_cases():
        row: dict[str, Any] = {
            "policy": Path(policy).stem,
            "pipeline": pipeline.name,
            "tier": pipeline.tier,
            "steps": len(pipeline.graph),
        }
        for dim in _DIMS:
            worst, ceiling = wc.get(dim), pipeline.budget.get(dim)
            row[dim.value] = {
                "worst": None
                if worst is None
                else (str(worst) if not isinstance(worst, int) else worst),
                "ceiling": None
                if ceiling is None
                else (str(ceiling) if not isinstance(ceiling, int) else ceiling),
                "ok": ceiling is None or (worst is not None and worst <= ceiling),
            }
        row["expected_latency_ms"] = wc.expected_latency_ms
        row["latency_path"] = list(wc.latency_path)
        rows.append(row)
    return sorted(rows, key=lambda r: (r["policy"], r["pipeline"], r["tier"] or ""))


def render_plan_table(rows: list[dict[str, Any]]) -> str:
    headers = [
        "policy",
        "pipeline",
        "tier",
        "steps",
        "calls",
        "tokens",
        "credits",
        "cost",
        "latency",
        "p95",
    ]
    table = [headers]
    for r in rows:
        cells = [r["policy"], r["pipeline"], r["tier"] or "-", str(r["steps"])]
        for dim in _DIMS:
            cell = r[dim.value]
            worst = (
                format_quantity(dim, _num(dim, cell["worst"]))
                if cell["worst"] is not None
                else "unbounded"
            )
            ceiling = format_quantity(dim, _num(dim, cell["ceiling"]))
            mark = "" if cell["ok"] else " !"
            cells.append(f"{worst}/{ceiling}{mark}")
        exp = r["expected_latency_ms"]
        cells.append(format_quantity(Dimension.LATENCY, exp) if exp is not None else "-")
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    lines.append(
        "worst/ceiling per dimension; '!' marks a worst case past its ceiling; '-' = no ceiling"
    )
    return "\n".join(lines)


def _num(dim: Dimension, value: Any) -> Any:
    from decimal import Decimal

    if value is None:
        return None
    return Decimal(value) if dim in (Dimension.CREDITS, Dimension.COST) else int(value)
