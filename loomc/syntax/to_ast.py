"""The Lark tree of a `.loom` file -> the typed AST (:mod:`loomc.syntax.ast`), with spans.

Split from :mod:`loomc.syntax.parser`, which owns the grammar, the parser and syntax
diagnostics; this module owns what a well-formed tree means. Import it through the parser, which
imports lark without the third-party ``regex`` module first.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from lark import Token, Transformer, v_args

from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.syntax import ast
from loomc.units import DURATION_FACTORS

MAX_NUMBER = Decimal(10) ** 15
"""The largest number a .loom file may write, in the unit it is written in (LOOM106)."""
MAX_DIGITS = 40
"""The most digits a number literal may have, fraction included (LOOM106)."""


def diag(code: str, message: str, span: Span, hint: str | None = None) -> Diagnostic:
    return Diagnostic(code=code, severity=Severity.ERROR, message=message, span=span, hint=hint)


class BadLiteral(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


# --- tree -> AST ---------------------------------------------------------------------------


_UNIT_WORDS = {
    "call": "calls",
    "calls": "calls",
    "token": "tokens",
    "tokens": "tokens",
    "credit": "credits",
    "credits": "credits",
}


@v_args(meta=True)
class ToAst(Transformer[Token, Any]):
    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    # spans
    def _span(self, meta: Any) -> Span:
        if getattr(meta, "empty", True):
            return Span.point(self.path)
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok_span(self, tok: Token) -> Span:
        return Span(
            self.path,
            tok.line or 1,
            tok.column or 1,
            tok.end_line or tok.line or 1,
            tok.end_column or (tok.column or 1) + 1,
        )

    def _name(self, tok: Token) -> ast.Name:
        return ast.Name(str(tok), self._tok_span(tok))

    def _number(self, text: str, tok: Token) -> Decimal:
        # The number terminals only match well-formed numbers, so this cannot fail in practice;
        # should the grammar ever let one through, it is a syntax error, not a traceback.
        digits = text.replace("_", "")
        if sum(ch.isdigit() for ch in digits) > MAX_DIGITS:
            raise BadLiteral(self._out_of_range(f"a number of {len(digits)} digits", tok))
        try:
            value = Decimal(digits)
        except InvalidOperation as exc:
            raise BadLiteral(
                diag("LOOM101", f"invalid number {text!r}", self._tok_span(tok))
            ) from exc
        if value > MAX_NUMBER:
            raise BadLiteral(self._out_of_range(f"{text[:24]!r}", tok))
        return value

    def _out_of_range(self, what: str, tok: Token) -> Diagnostic:
        return diag(
            "LOOM106",
            f"number too large: {what} (the maximum is 10^15 in its unit)",
            self._tok_span(tok),
        )

    # top level
    def start(self, meta: Any, children: list[ast.PipelineDecl]) -> list[ast.PipelineDecl]:
        return children

    def string(self, meta: Any, children: list[Token]) -> ast.Str:
        tok = children[0]
        raw = str(tok)
        value = _dedent(raw[3:-3]) if tok.type == "TRIPLE" else _unescape(raw[1:-1])
        return ast.Str(value, self._tok_span(tok))

    def bare(self, meta: Any, children: list[Token]) -> ast.Quantity:
        tok = children[0]
        return ast.Quantity(self._number(str(tok), tok), None, str(tok), self._tok_span(tok))

    def unit(self, meta: Any, children: list[Token]) -> ast.Quantity:
        tok = children[0]
        text = str(tok)
        head = text.rstrip("abcdefghijklmnopqrstuvwxyz")
        word = text[len(head) :]
        value = self._number(head.strip(), tok)
        return ast.Quantity(value, _UNIT_WORDS[word], text, self._tok_span(tok))

    def duration(self, meta: Any, children: list[Token]) -> ast.Quantity:
        tok = children[0]
        text = str(tok)
        for suffix in ("min", "ms", "s"):
            if text.endswith(suffix):
                value = self._number(text[: -len(suffix)], tok) * DURATION_FACTORS[suffix]
                return ast.Quantity(value, "ms", text, self._tok_span(tok))
        raise AssertionError(text)

    def money(self, meta: Any, children: list[Token]) -> ast.Quantity:
        tok = children[0]
        return ast.Quantity(self._number(str(tok)[1:], tok), "usd", str(tok), self._tok_span(tok))

    # pipeline members
    def instruction(self, meta: Any, children: list[ast.Str]) -> tuple[str, ast.Str]:
        return ("instruction", children[0])

    def tiers(self, meta: Any, children: list[Token]) -> tuple[str, Any]:
        return ("tiers", (tuple(self._name(t) for t in children), self._span(meta)))

    def kind(self, meta: Any, children: list[Token]) -> tuple[str, Any]:
        return ("kind", self._name(children[0]))

    def inputs(self, meta: Any, children: list[ast.Quantity]) -> tuple[str, Any]:
        return ("input_tokens", children[0])

    def limit(self, meta: Any, children: list[Any]) -> ast.Limit:
        return ast.Limit(self._name(children[0]), children[1], self._span(meta))

    def budget(self, meta: Any, children: list[ast.Limit]) -> tuple[str, Any]:
        return ("budget", tuple(children))

    def require(self, meta: Any, children: list[Token]) -> tuple[str, Any]:
        names = [self._name(t) for t in children]
        return ("require", ast.RequireDecl(names[0], tuple(names[1:]), self._span(meta)))

    def answer(self, meta: Any, children: list[Token]) -> tuple[str, Any]:
        return ("answer", (tuple(self._name(t) for t in children), self._span(meta)))

    def sees_item(self, meta: Any, children: list[Token]) -> ast.SeesItem:
        return ast.SeesItem(self._name(children[0]), optional=len(children) > 1)

    def sees(self, meta: Any, children: list[ast.SeesItem]) -> tuple[str, Any, Span]:
        return ("sees", tuple(children), self._span(meta))

    def after(self, meta: Any, children: list[Token]) -> tuple[str, Any, Span]:
        return ("after", tuple(self._name(t) for t in children), self._span(meta))

    def when(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("when", children[0], self._span(meta))

    def task(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("task", children[0], self._span(meta))

    def max_tokens(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("max_tokens", children[0], self._span(meta))

    def timeout(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("timeout", children[0], self._span(meta))

    def retries(self, meta: Any, children: list[Any]) -> tuple[str, Any, Span]:
        return ("retries", children[0], self._span(meta))

    def body(self, meta: Any, children: list[Any]) -> list[Any]:
        return children

    def step(self, meta: Any, children: list[Any]) -> tuple[str, ast.StepDecl]:
        name, role, worker = (self._name(t) for t in children[:3])
        fields: dict[str, Any] = {}
        duplicates: list[Span] = []
        rest: list[Any] = []
        for child in children[3:]:
            rest.extend(child if isinstance(child, list) else [child])
        for key, value, span in rest:
            if key in fields:
                duplicates.append(span)
                continue
            fields[key] = value
        decl = ast.StepDecl(
            name=name,
            role=role,
            worker=worker,
            sees=fields.get("sees", ()),
            after=fields.get("after", ()),
            when=fields.get("when"),
            task=fields.get("task"),
            max_tokens=fields.get("max_tokens"),
            timeout=fields.get("timeout"),
            retries=fields.get("retries"),
            span=self._span(meta),
            duplicates=tuple(duplicates),
        )
        return ("step", decl)

    def pipeline(self, meta: Any, children: list[Any]) -> ast.PipelineDecl:
        name = self._name(children[0])
        singles: dict[str, Any] = {}
        duplicates: list[tuple[str, Span]] = []
        limits: list[ast.Limit] = []
        steps: list[ast.StepDecl] = []
        requires: list[ast.RequireDecl] = []
        for key, value in children[1:]:
            if key == "budget":
                limits.extend(value)
            elif key == "step":
                steps.append(value)
            elif key == "require":
                requires.append(value)
            elif key in singles:
                duplicates.append((key, _member_span(value)))
            else:
                singles[key] = value
        answer = singles.get("answer")
        tiers = singles.get("tiers")
        return ast.PipelineDecl(
            name=name,
            instruction=singles.get("instruction"),
            limits=tuple(limits),
            tiers=tiers[0] if tiers else None,
            kind=singles.get("kind"),
            input_tokens=singles.get("input_tokens"),
            steps=tuple(steps),
            requires=tuple(requires),
            answer=answer[0] if answer else (),
            answer_span=answer[1] if answer else None,
            span=self._span(meta),
            duplicates=tuple(duplicates),
        )

    # expressions
    def dotted(self, meta: Any, children: list[Token]) -> ast.Dotted:
        return ast.Dotted(tuple(str(t) for t in children), self._span(meta))

    def str_atom(self, meta: Any, children: list[ast.Str]) -> ast.Literal:
        return ast.Literal(children[0].value, children[0].span)

    def num_atom(self, meta: Any, children: list[Token]) -> ast.Literal:
        value = self._number(str(children[0]), children[0])
        number: int | float = int(value) if value == value.to_integral_value() else float(value)
        return ast.Literal(number, self._span(meta))

    def true(self, meta: Any, children: list[Any]) -> ast.Literal:
        return ast.Literal(True, self._span(meta))

    def false(self, meta: Any, children: list[Any]) -> ast.Literal:
        return ast.Literal(False, self._span(meta))

    def compare(self, meta: Any, children: list[Any]) -> ast.CompareExpr:
        left, op, right = children
        return ast.CompareExpr(str(op), left, right, self._span(meta))

    def contains(self, meta: Any, children: list[Any]) -> ast.ContainsExpr:
        return ast.ContainsExpr(children[0], children[1], self._span(meta))

    def matches(self, meta: Any, children: list[Any]) -> ast.MatchesExpr:
        return ast.MatchesExpr(children[0], children[1], self._span(meta))

    def or_(self, meta: Any, children: list[Any]) -> ast.ExprNode:
        if len(children) == 1:
            return children[0]  # type: ignore[no-any-return]
        return ast.BoolExpr("or", tuple(children), self._span(meta))

    def and_(self, meta: Any, children: list[Any]) -> ast.ExprNode:
        if len(children) == 1:
            return children[0]  # type: ignore[no-any-return]
        return ast.BoolExpr("and", tuple(children), self._span(meta))

    def not_(self, meta: Any, children: list[Any]) -> ast.NotExpr:
        return ast.NotExpr(children[0], self._span(meta))


def _member_span(value: Any) -> Span:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], Span):
        return value[1]
    span = getattr(value, "span", None)
    return span if isinstance(span, Span) else Span.point("<unknown>")


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.append(escapes.get(body[i + 1], body[i + 1]))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _dedent(body: str) -> str:
    import textwrap

    return textwrap.dedent(body.strip("\n")).strip()
