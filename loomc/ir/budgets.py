"""A pipeline's `budget { ... }` block as a typed Budget (units checked), and the money promise a
policy without prices cannot prove."""

from __future__ import annotations

from decimal import Decimal

from loomc.diagnostics import Span
from loomc.ir.collector import Collector
from loomc.policy.load import PolicySource
from loomc.syntax import ast
from loomc.text import did_you_mean
from loomc.units import Budget, Dimension

_LIMIT_UNITS: dict[str, tuple[Dimension, tuple[str | None, ...]]] = {
    "calls": (Dimension.CALLS, (None, "calls")),
    "tokens": (Dimension.TOKENS, (None, "tokens")),
    "credits": (Dimension.CREDITS, (None, "credits")),
    "cost": (Dimension.COST, ("usd",)),
    "latency": (Dimension.LATENCY, ("ms",)),
}
UNIT_TEXT = {
    None: "a bare number",
    "calls": "calls",
    "tokens": "tokens",
    "credits": "credits",
    "usd": "dollars",
    "ms": "a duration",
}


def unpriced(effective: Budget, policy: PolicySource, overrides: Budget | None) -> Budget:
    """A policy with no pricing at all bills in something else (credits, a local machine): the
    pipeline's or tier's money promise cannot be proved there, so it leaves the effective budget
    and the checker says it is unproven (LOOM412 warning); the credit, token and call ceilings
    still bind. A policy that prices some models but not one the pipeline uses is a mistake and
    stays an error. A money limit given at run time is never dropped."""
    if effective.cost is None or policy.policy.pricing:
        return effective
    if overrides is not None and overrides.cost is not None:
        return effective
    return effective.with_value(Dimension.COST, None)


def pipeline_budget(decl: ast.PipelineDecl, out: Collector) -> tuple[Budget, dict[str, Span]]:
    budget = Budget()
    spans: dict[str, Span] = {}
    for limit in decl.limits:
        dim_name = limit.dimension.value
        if dim_name not in _LIMIT_UNITS:
            out.error(
                "LOOM413",
                f"unknown budget dimension {dim_name!r}",
                limit.dimension.span,
                did_you_mean(dim_name, _LIMIT_UNITS) or "use calls, tokens, credits, cost, latency",
            )
            continue
        dim, units = _LIMIT_UNITS[dim_name]
        q = limit.quantity
        if q.unit not in units:
            example = {"cost": "$0.08", "latency": "60s"}.get(dim_name, f"{dim_name} <= 3")
            out.error(
                "LOOM410",
                f"`{dim_name}` is measured in {UNIT_TEXT[units[-1]]}, not {UNIT_TEXT[q.unit]} "
                f"({q.text})",
                q.span,
                f"write e.g. `{dim_name} <= {example}`"
                if dim_name in ("cost", "latency")
                else f"write `{dim_name} <= N`",
            )
            continue
        if dim_name in spans:
            out.warn(
                "LOOM105", f"`{dim_name}` is limited twice; the tighter ceiling counts", limit.span
            )
        value: int | Decimal
        if dim in (Dimension.CREDITS, Dimension.COST):
            value = q.value
        else:
            if q.value != q.value.to_integral_value():
                out.error("LOOM414", f"`{dim_name}` must be a whole number ({q.text})", q.span)
                continue
            value = int(q.value)
        current = budget.get(dim)
        budget = budget.with_value(dim, value if current is None else min(current, value))
        spans[dim.value] = limit.span
    return budget, spans
