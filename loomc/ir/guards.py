"""Resolve AST guard expressions into IR expressions and fold what is static (the tier).

Resolution is where a guard's names get meaning: ``tier`` and ``risk`` are facts, ``direct.refused``
is a step predicate, a bare ``high`` is a symbol whose type is checked against what it is compared
with. Folding removes the tier so each pipeline x tier graph only carries runtime decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.ir.model import (
    RISK_ORDER,
    STEP_PREDICATES,
    And,
    Compare,
    Const,
    Contains,
    Expr,
    Fact,
    Matches,
    Not,
    Or,
    StepFact,
)
from loomc.syntax import ast
from loomc.text import did_you_mean

KINDS = ("general", "code-review", "research")
FACTS = {
    ("risk",): "level",
    ("risk", "level"): "level",
    ("risk", "kind"): "kind",
    ("risk", "complexity"): "level",
    ("risk", "signals"): "set",
    ("risk", "probability"): "number",
    ("input",): "text",
    ("input", "length"): "number",
    ("tier",): "tier",
}

Report = Callable[[Diagnostic], None]


class GuardResolver:
    def __init__(self, steps: Collection[str], tiers: Collection[str], report: Report) -> None:
        self.steps = steps
        self.tiers = tiers
        self.report = report
        self.errors = 0  # counted whichever collector `report` is, so callers can tell

    def resolve(self, node: ast.ExprNode, tier: str | None) -> Expr:
        return fold(self._resolve(node, tier))

    def _resolve(self, node: ast.ExprNode, tier: str | None) -> Expr:
        match node:
            case ast.Literal(value=value):
                return Const(value)
            case ast.Dotted():
                return self._dotted(node, tier)
            case ast.BoolExpr(op="and", items=items):
                return And(tuple(self._resolve(i, tier) for i in items))
            case ast.BoolExpr(items=items):
                return Or(tuple(self._resolve(i, tier) for i in items))
            case ast.NotExpr(item=item):
                return Not(self._resolve(item, tier))
            case ast.MatchesExpr(subject=subject, pattern=pattern):
                import re

                try:
                    re.compile(pattern.value)
                except re.error as exc:
                    self._error("LOOM213", f"invalid regular expression: {exc}", pattern.span)
                return Matches(self._resolve(subject, tier), pattern.value)
            case ast.ContainsExpr(item=item, collection=coll):
                return Contains(self._resolve(item, tier), self._resolve(coll, tier))
            case ast.CompareExpr(op=op, left=left, right=right):
                lhs, rhs = self._resolve(left, tier), self._resolve(right, tier)
                self._check_compare(lhs, rhs, node.span)
                return Compare(op, lhs, rhs)  # type: ignore[arg-type]
        raise TypeError(node)

    def _dotted(self, node: ast.Dotted, tier: str | None) -> Expr:
        parts = node.parts
        if parts == ("tier",):
            return Const(tier if tier is not None else "")
        if parts in FACTS:
            return Fact(parts)
        if parts[0] in self.steps:
            if len(parts) == 2 and parts[1] in STEP_PREDICATES:
                return StepFact(parts[0], parts[1])
            hint = did_you_mean(parts[-1], STEP_PREDICATES) if len(parts) == 2 else None
            self._error(
                "LOOM212",
                f"unknown step predicate {'.'.join(parts)!r}",
                node.span,
                hint or f"a step predicate is one of: {', '.join(STEP_PREDICATES)}",
            )
            return Const(False)
        if len(parts) == 1:
            return Const(parts[0])  # a symbol; its type is checked where it is compared
        known = [".".join(p) for p in FACTS] + [f"{s}.ran" for s in self.steps]
        self._error(
            "LOOM212",
            f"unknown fact {'.'.join(parts)!r}",
            node.span,
            did_you_mean(".".join(parts), known),
        )
        return Const(False)

    def _check_compare(self, lhs: Expr, rhs: Expr, span: Span) -> None:
        fact, other = (lhs, rhs) if isinstance(lhs, Fact) else (rhs, lhs)
        if isinstance(lhs, Const) and isinstance(rhs, Const) and lhs.value in ("",):
            return
        if not isinstance(fact, Fact):
            # tier was folded to a constant: check the other side names a tier
            for a, b in ((lhs, rhs), (rhs, lhs)):
                if isinstance(a, Const) and isinstance(b, Const) and a.value in self.tiers:
                    if isinstance(b.value, str) and b.value not in self.tiers:
                        self._error(
                            "LOOM211",
                            f"{b.value!r} is not a tier of the policy",
                            span,
                            did_you_mean(b.value, self.tiers),
                        )
                    return
            return
        kind = FACTS[fact.path]
        value = other.value if isinstance(other, Const) else None
        if kind == "level":
            if not isinstance(value, str) or value not in RISK_ORDER:
                self._error(
                    "LOOM214" if isinstance(value, str) else "LOOM213",
                    f"{fact.dotted} is compared with {value!r}, not a risk level",
                    span,
                    did_you_mean(str(value), RISK_ORDER) or "risk levels are low, medium, high",
                )
        elif kind == "kind":
            if value not in KINDS:
                self._error(
                    "LOOM214",
                    f"{value!r} is not a task kind",
                    span,
                    did_you_mean(str(value), KINDS) or f"kinds are {', '.join(KINDS)}",
                )
        elif kind == "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                self._error("LOOM213", f"{fact.dotted} is a number, compared with {value!r}", span)
        elif kind in ("set", "text"):
            self._error(
                "LOOM213",
                f"{fact.dotted} cannot be compared with {'`in`' if kind == 'set' else '`matches`'} "
                "instead",
                span,
            )

    def _error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.errors += 1
        self.report(Diagnostic(code, Severity.ERROR, message, span, hint))


def fold(expr: Expr) -> Expr:
    """Constant-fold; the result is Const(True/False) when the guard no longer depends on runtime."""
    match expr:
        case Compare(op=op, left=Const(value=a), right=Const(value=b)):
            return Const(compare_values(op, a, b))
        case And(items=items):
            folded = [fold(i) for i in items]
            if any(isinstance(i, Const) and i.value is False for i in folded):
                return Const(False)
            rest = [i for i in folded if not (isinstance(i, Const) and i.value is True)]
            if not rest:
                return Const(True)
            return rest[0] if len(rest) == 1 else And(tuple(rest))
        case Or(items=items):
            folded = [fold(i) for i in items]
            if any(isinstance(i, Const) and i.value is True for i in folded):
                return Const(True)
            rest = [i for i in folded if not (isinstance(i, Const) and i.value is False)]
            if not rest:
                return Const(False)
            return rest[0] if len(rest) == 1 else Or(tuple(rest))
        case Not(item=item):
            inner = fold(item)
            if isinstance(inner, Const):
                return Const(not bool(inner.value))
            return Not(inner)
    return expr


def compare_values(op: str, a: object, b: object) -> bool:
    """One comparison rule for compile-time folding and runtime guards (type errors are false)."""
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    try:
        if op == "<":
            return bool(a < b)  # type: ignore[operator]
        if op == "<=":
            return bool(a <= b)  # type: ignore[operator]
        if op == ">":
            return bool(a > b)  # type: ignore[operator]
        return bool(a >= b)  # type: ignore[operator]
    except TypeError:
        return False
