"""The typed AST of a `.loom` file. Every node keeps its source span so that any later stage
can point back at what the user wrote (lark's ``WithMeta`` habit).

The nodes are :class:`~loomc.syntax.frozen.Frozen` classes, not dataclasses: the same equality,
hash, repr and immutability, without ~1 ms of generated code per class at every start.
"""

from __future__ import annotations

from decimal import Decimal

from loomc.diagnostics import Span
from loomc.syntax.frozen import Frozen, set_field


class Quantity(Frozen):
    """A number with the unit it was written in: ``None`` (bare), calls/tokens/credits,
    ``ms`` (durations normalised to milliseconds) or ``usd``."""

    _fields = ("value", "unit", "text", "span")
    __slots__ = _fields

    value: Decimal
    unit: str | None
    text: str
    span: Span

    def __init__(self, value: Decimal, unit: str | None, text: str, span: Span) -> None:
        set_field(self, "value", value)
        set_field(self, "unit", unit)
        set_field(self, "text", text)
        set_field(self, "span", span)


class Name(Frozen):
    _fields = ("value", "span")
    __slots__ = _fields

    value: str
    span: Span

    def __init__(self, value: str, span: Span) -> None:
        set_field(self, "value", value)
        set_field(self, "span", span)


class Str(Frozen):
    _fields = ("value", "span")
    __slots__ = _fields

    value: str
    span: Span

    def __init__(self, value: str, span: Span) -> None:
        set_field(self, "value", value)
        set_field(self, "span", span)


# --- expressions (before name resolution) -------------------------------------------------


class Dotted(Frozen):
    _fields = ("parts", "span")
    __slots__ = _fields

    parts: tuple[str, ...]
    span: Span

    def __init__(self, parts: tuple[str, ...], span: Span) -> None:
        set_field(self, "parts", parts)
        set_field(self, "span", span)


class Literal(Frozen):
    _fields = ("value", "span")
    __slots__ = _fields

    value: str | int | float | bool
    span: Span

    def __init__(self, value: str | int | float | bool, span: Span) -> None:
        set_field(self, "value", value)
        set_field(self, "span", span)


class CompareExpr(Frozen):
    _fields = ("op", "left", "right", "span")
    __slots__ = _fields

    op: str
    left: ExprNode
    right: ExprNode
    span: Span

    def __init__(self, op: str, left: ExprNode, right: ExprNode, span: Span) -> None:
        set_field(self, "op", op)
        set_field(self, "left", left)
        set_field(self, "right", right)
        set_field(self, "span", span)


class ContainsExpr(Frozen):
    _fields = ("item", "collection", "span")
    __slots__ = _fields

    item: ExprNode
    collection: ExprNode
    span: Span

    def __init__(self, item: ExprNode, collection: ExprNode, span: Span) -> None:
        set_field(self, "item", item)
        set_field(self, "collection", collection)
        set_field(self, "span", span)


class MatchesExpr(Frozen):
    _fields = ("subject", "pattern", "span")
    __slots__ = _fields

    subject: ExprNode
    pattern: Str
    span: Span

    def __init__(self, subject: ExprNode, pattern: Str, span: Span) -> None:
        set_field(self, "subject", subject)
        set_field(self, "pattern", pattern)
        set_field(self, "span", span)


class BoolExpr(Frozen):
    _fields = ("op", "items", "span")
    __slots__ = _fields

    op: str  # "and" | "or"
    items: tuple[ExprNode, ...]
    span: Span

    def __init__(self, op: str, items: tuple[ExprNode, ...], span: Span) -> None:
        set_field(self, "op", op)
        set_field(self, "items", items)
        set_field(self, "span", span)


class NotExpr(Frozen):
    _fields = ("item", "span")
    __slots__ = _fields

    item: ExprNode
    span: Span

    def __init__(self, item: ExprNode, span: Span) -> None:
        set_field(self, "item", item)
        set_field(self, "span", span)


ExprNode = Dotted | Literal | CompareExpr | ContainsExpr | MatchesExpr | BoolExpr | NotExpr


# --- declarations ---------------------------------------------------------------------------


class Limit(Frozen):
    _fields = ("dimension", "quantity", "span")
    __slots__ = _fields

    dimension: Name
    quantity: Quantity
    span: Span

    def __init__(self, dimension: Name, quantity: Quantity, span: Span) -> None:
        set_field(self, "dimension", dimension)
        set_field(self, "quantity", quantity)
        set_field(self, "span", span)


class SeesItem(Frozen):
    _fields = ("name", "optional")
    __slots__ = _fields

    name: Name
    optional: bool

    def __init__(self, name: Name, optional: bool) -> None:
        set_field(self, "name", name)
        set_field(self, "optional", optional)


class StepDecl(Frozen):
    _fields = (
        "name",
        "role",
        "worker",
        "sees",
        "after",
        "when",
        "task",
        "max_tokens",
        "timeout",
        "retries",
        "span",
        "duplicates",
    )
    __slots__ = _fields

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
    duplicates: tuple[Span, ...]  # repeated clauses, reported by the compiler

    def __init__(
        self,
        name: Name,
        role: Name,
        worker: Name,
        sees: tuple[SeesItem, ...],
        after: tuple[Name, ...],
        when: ExprNode | None,
        task: Str | None,
        max_tokens: Quantity | None,
        timeout: Quantity | None,
        retries: Quantity | None,
        span: Span,
        duplicates: tuple[Span, ...] = (),
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "role", role)
        set_field(self, "worker", worker)
        set_field(self, "sees", sees)
        set_field(self, "after", after)
        set_field(self, "when", when)
        set_field(self, "task", task)
        set_field(self, "max_tokens", max_tokens)
        set_field(self, "timeout", timeout)
        set_field(self, "retries", retries)
        set_field(self, "span", span)
        set_field(self, "duplicates", duplicates)


class RequireDecl(Frozen):
    _fields = ("kind", "steps", "span")
    __slots__ = _fields

    kind: Name
    steps: tuple[Name, ...]
    span: Span

    def __init__(self, kind: Name, steps: tuple[Name, ...], span: Span) -> None:
        set_field(self, "kind", kind)
        set_field(self, "steps", steps)
        set_field(self, "span", span)


class PipelineDecl(Frozen):
    _fields = (
        "name",
        "instruction",
        "limits",
        "tiers",
        "kind",
        "input_tokens",
        "steps",
        "requires",
        "answer",
        "answer_span",
        "span",
        "duplicates",
    )
    __slots__ = _fields

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
    duplicates: tuple[tuple[str, Span], ...]

    def __init__(
        self,
        name: Name,
        instruction: Str | None,
        limits: tuple[Limit, ...],
        tiers: tuple[Name, ...] | None,
        kind: Name | None,
        input_tokens: Quantity | None,
        steps: tuple[StepDecl, ...],
        requires: tuple[RequireDecl, ...],
        answer: tuple[Name, ...],
        answer_span: Span | None,
        span: Span,
        duplicates: tuple[tuple[str, Span], ...] = (),
    ) -> None:
        set_field(self, "name", name)
        set_field(self, "instruction", instruction)
        set_field(self, "limits", limits)
        set_field(self, "tiers", tiers)
        set_field(self, "kind", kind)
        set_field(self, "input_tokens", input_tokens)
        set_field(self, "steps", steps)
        set_field(self, "requires", requires)
        set_field(self, "answer", answer)
        set_field(self, "answer_span", answer_span)
        set_field(self, "span", span)
        set_field(self, "duplicates", duplicates)


class Module(Frozen):
    _fields = ("path", "pipelines", "source")
    __slots__ = _fields
    _hidden = ("source",)

    path: str
    pipelines: tuple[PipelineDecl, ...]
    source: str

    def __init__(self, path: str, pipelines: tuple[PipelineDecl, ...], source: str = "") -> None:
        set_field(self, "path", path)
        set_field(self, "pipelines", pipelines)
        set_field(self, "source", source)
