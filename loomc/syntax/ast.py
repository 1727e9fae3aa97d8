"""The typed AST of a `.loom` file. Every node keeps its source span so that any later stage
can point back at what the user wrote (lark's ``WithMeta`` habit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from loomc.diagnostics import Span


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number with the unit it was written in: ``None`` (bare), calls/tokens/credits,
    ``ms`` (durations normalised to milliseconds) or ``usd``."""

    value: Decimal
    unit: str | None
    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class Name:
    value: str
    span: Span


@dataclass(frozen=True, slots=True)
class Str:
    value: str
    span: Span


# --- expressions (before name resolution) -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dotted:
    parts: tuple[str, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Literal:
    value: str | int | float | bool
    span: Span


@dataclass(frozen=True, slots=True)
class CompareExpr:
    op: str
    left: ExprNode
    right: ExprNode
    span: Span


@dataclass(frozen=True, slots=True)
class ContainsExpr:
    item: ExprNode
    collection: ExprNode
    span: Span


@dataclass(frozen=True, slots=True)
class MatchesExpr:
    subject: ExprNode
    pattern: Str
    span: Span


@dataclass(frozen=True, slots=True)
class BoolExpr:
    op: str  # "and" | "or"
    items: tuple[ExprNode, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class NotExpr:
    item: ExprNode
    span: Span


ExprNode = Dotted | Literal | CompareExpr | ContainsExpr | MatchesExpr | BoolExpr | NotExpr


# --- declarations ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Limit:
    dimension: Name
    quantity: Quantity
    span: Span


@dataclass(frozen=True, slots=True)
class SeesItem:
    name: Name
    optional: bool


@dataclass(frozen=True, slots=True)
class StepDecl:
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


@dataclass(frozen=True, slots=True)
class RequireDecl:
    kind: Name
    steps: tuple[Name, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class PipelineDecl:
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


@dataclass(frozen=True, slots=True)
class Module:
    path: str
    pipelines: tuple[PipelineDecl, ...]
    source: str = field(repr=False, default="")
