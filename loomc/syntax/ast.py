"""The typed AST of a `.loom` file. Every node keeps its source span so that any later stage
can point back at what the user wrote (lark's ``WithMeta`` habit).

The nodes are :class:`~loomc.frozen.Frozen` classes, written and behaving like frozen
dataclasses, without ~1 ms of generated code per class at every start.
"""

from __future__ import annotations

from decimal import Decimal

from loomc.diagnostics import Span
from loomc.frozen import Frozen


class Quantity(Frozen):
    """A number with the unit it was written in: ``None`` (bare), calls/tokens/credits,
    ``ms`` (durations normalised to milliseconds) or ``usd``."""

    value: Decimal
    unit: str | None
    text: str
    span: Span


class Name(Frozen):
    value: str
    span: Span


class Str(Frozen):
    value: str
    span: Span


# --- expressions (before name resolution) -------------------------------------------------


class Dotted(Frozen):
    parts: tuple[str, ...]
    span: Span


class Literal(Frozen):
    value: str | int | float | bool
    span: Span


class CompareExpr(Frozen):
    op: str
    left: ExprNode
    right: ExprNode
    span: Span


class ContainsExpr(Frozen):
    item: ExprNode
    collection: ExprNode
    span: Span


class MatchesExpr(Frozen):
    subject: ExprNode
    pattern: Str
    span: Span


class BoolExpr(Frozen):
    op: str  # "and" | "or"
    items: tuple[ExprNode, ...]
    span: Span


class NotExpr(Frozen):
    item: ExprNode
    span: Span


ExprNode = Dotted | Literal | CompareExpr | ContainsExpr | MatchesExpr | BoolExpr | NotExpr


# --- declarations ---------------------------------------------------------------------------


class Limit(Frozen):
    dimension: Name
    quantity: Quantity
    span: Span


class SeesItem(Frozen):
    name: Name
    optional: bool


class StepDecl(Frozen):
    name: Name
    role: Name
    worker: Name
    sees: tuple[SeesItem, ...]
    after: tuple[Name, ...]
    when: ExprNode | None
    task: Str | None
    max_tokens: Quantity | None
    timeout: Quantity | None
    retries: Quantity | None
    span: Span
    duplicates: tuple[Span, ...] = ()  # repeated clauses, reported by the compiler


class RequireDecl(Frozen):
    kind: Name
    steps: tuple[Name, ...]
    span: Span


class PipelineDecl(Frozen):
    name: Name
    instruction: Str | None
    limits: tuple[Limit, ...]
    tiers: tuple[Name, ...] | None
    kind: Name | None
    input_tokens: Quantity | None
    steps: tuple[StepDecl, ...]
    requires: tuple[RequireDecl, ...]
    answer: tuple[Name, ...]
    answer_span: Span | None
    span: Span
    duplicates: tuple[tuple[str, Span], ...] = ()


class Module(Frozen):
    _hidden = ("source",)

    path: str
    pipelines: tuple[PipelineDecl, ...]
    source: str = ""
