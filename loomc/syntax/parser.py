"""Parse `.loom` source into the typed AST; syntax errors become diagnostics, never tracebacks.

The LALR parser is built once per process (python-hcl2's habit) from the one canonical grammar,
which ships inside the wheel as ``loomc/syntax/loom.lark`` and is read from ``grammar/`` in a
source checkout; its tables are cached on disk between processes (:mod:`loomc.syntax.tables`).
"""

from __future__ import annotations

import functools
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any


def _lark_without_regex() -> None:
    """Import lark without the third-party ``regex`` module (about 10 ms of start-up).

    lark imports ``regex`` whenever it is installed, yet uses it only for grammars built with
    ``regex=True`` or written with Unicode categories (``\\p{L}``); ours is neither (stdlib
    ``re`` compiles every terminal; tests/compiler/test_parser_cache.py builds and parses with
    it). A ``None`` entry in ``sys.modules`` makes that one ``import regex`` fail, and is taken
    out again at once so that any later importer (a tokenizer) still gets the real module."""
    if "lark" in sys.modules or "regex" in sys.modules:
        return
    sys.modules["regex"] = None  # type: ignore[assignment]
    try:
        import lark  # noqa: F401
    finally:
        del sys.modules["regex"]


_lark_without_regex()

from lark import Lark, Token, Transformer, Tree, v_args  # noqa: E402
from lark.exceptions import (  # noqa: E402
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from loomc.diagnostics import Diagnostic, Severity, Span  # noqa: E402
from loomc.sources import read_source  # noqa: E402
from loomc.syntax import ast  # noqa: E402
from loomc.syntax.tables import build_parser  # noqa: E402
from loomc.units import DURATION_FACTORS  # noqa: E402

_HERE = Path(__file__).resolve().parent
_GRAMMAR_CANDIDATES = (_HERE / "loom.lark", _HERE.parents[1] / "grammar" / "loom.lark")

MAX_NUMBER = Decimal(10) ** 15
"""The largest number a .loom file may write, in the unit it is written in (LOOM106)."""
MAX_DIGITS = 40
"""The most digits a number literal may have, fraction included (LOOM106)."""
MAX_NESTING = 64
"""The deepest an expression may nest: one level per parenthesis pair or ``not`` (LOOM107)."""

_TERMINAL_NAMES = {
    "NAME": "a name",
    "NUMBER": "a number",
    "UNITNUM": "a quantity",
    "DURATION": "a duration",
    "MONEY": "an amount",
    "STRING": "a string",
    "TRIPLE": "a string",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COLON": "':'",
    "COMMA": "','",
    "DOT": "'.'",
    "VBAR": "'|'",
    "COMPOP": "a comparison",
    "OPTIONAL": "'?'",
    "$END": "end of file",
}


def grammar_path() -> Path:
    for candidate in _GRAMMAR_CANDIDATES:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("loom.lark not found in the package or the source tree")


@functools.cache
def _parser() -> Lark:
    parser: Lark = build_parser(grammar_path().read_text(encoding="utf-8"))
    return parser


def parse_file(path: str | Path) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Read and parse one file; unreadable or binary files are diagnostics too."""
    text, problem = read_source(path, "LOOM103", "file")
    if text is None:
        return None, [problem] if problem else []
    return parse_text(text, str(path))


def parse_text(text: str, path: str = "<string>") -> tuple[ast.Module | None, list[Diagnostic]]:
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        return None, [_syntax_diagnostic(exc, text, path)]
    too_deep = _too_deep(tree, path)
    if too_deep is not None:
        return None, [too_deep]
    try:
        pipelines = _ToAst(path).transform(tree)
    except VisitError as exc:  # lark wraps what a transformer method raises
        if isinstance(exc.orig_exc, _BadLiteral):
            return None, [exc.orig_exc.diagnostic]
        raise
    return ast.Module(path=path, pipelines=tuple(pipelines), source=text), []


def _too_deep(tree: Tree[Token], path: str) -> Diagnostic | None:
    """The first expression nested past ``MAX_NESTING``, found without recursion: every later
    stage walks expressions recursively, so depth is bounded here, once, with a position."""
    stack: list[tuple[Tree[Token], int]] = [(tree, 0)]
    while stack:
        node, level = stack.pop()
        if node.data in ("or_", "not_"):  # each parenthesis opens an or_; each not is a not_
            level += 1
        if level > MAX_NESTING + 1:  # the guard itself is the first or_
            meta = node.meta
            line = getattr(meta, "line", 1) or 1
            column = getattr(meta, "column", 1) or 1
            span = Span(path, line, column, line, column + 1)
            return _diag(
                "LOOM107",
                f"expression nested deeper than {MAX_NESTING} levels",
                span,
                "split the condition, or drop redundant parentheses and double negations",
            )
        stack.extend((c, level) for c in node.children if isinstance(c, Tree))
    return None


# --- syntax errors ----------------------------------------------------------------------------


def _syntax_diagnostic(exc: UnexpectedInput, text: str, path: str) -> Diagnostic:
    line, column = max(exc.line, 1), max(exc.column, 1)
    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    span = Span(path, line, column, line, column + 1)
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        ch = text[pos] if pos < len(text) else ""
        if ch == '"' and text[max(pos - 2, 0) : pos + 1] == '"""':
            # the lexer read the first two quotes as an empty string; point at the opening
            start = Span(path, line, max(column - 2, 1), line, max(column - 2, 1) + 3)
            return _diag(
                "LOOM102", "unterminated triple-quoted string", start, 'close it with \'"""\''
            )
        if ch == '"':
            return _diag("LOOM102", "unterminated string", span, "close the string with '\"'")
        return _diag("LOOM101", f"unexpected character {ch!r}", span, _expected_hint(exc.allowed))
    if isinstance(exc, UnexpectedEOF):
        return _diag("LOOM101", "unexpected end of file", span, _expected_hint(exc.expected))
    assert isinstance(exc, UnexpectedToken)
    token = exc.token
    found = "end of file" if token.type == "$END" else repr(str(token))
    hint = _expected_hint(exc.expected)
    if token.type == "$END" and "RBRACE" in exc.expected:
        return _diag("LOOM101", "unexpected end of file: a block is not closed", span, "add '}'")
    return _diag("LOOM101", f"unexpected {found}", span, hint)


def _expected_hint(expected: Any) -> str | None:
    names = sorted({_TERMINAL_NAMES.get(t, _keyword(t)) for t in (expected or ())})
    if not names:
        return None
    if len(names) > 6:
        names = [*names[:6], "..."]
    return "expected " + ", ".join(names)


def _keyword(terminal: str) -> str:
    # Anonymous keyword terminals are named like "STEP", "SEES" by lark.
    return f"'{terminal.lower()}'" if terminal.isupper() else terminal


def _diag(code: str, message: str, span: Span, hint: str | None = None) -> Diagnostic:
    return Diagnostic(code=code, severity=Severity.ERROR, message=message, span=span, hint=hint)


class _BadLiteral(Exception):
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
class _ToAst(Transformer[Token, Any]):
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
            raise _BadLiteral(self._out_of_range(f"a number of {len(digits)} digits", tok))
        try:
            value = Decimal(digits)
        except InvalidOperation as exc:
            raise _BadLiteral(
                _diag("LOOM101", f"invalid number {text!r}", self._tok_span(tok))
            ) from exc
        if value > MAX_NUMBER:
            raise _BadLiteral(self._out_of_range(f"{text[:24]!r}", tok))
        return value

    def _out_of_range(self, what: str, tok: Token) -> Diagnostic:
        return _diag(
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


__all__ = ["grammar_path", "parse_file", "parse_text"]
