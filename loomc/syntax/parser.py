"""Parse `.loom` source into the typed AST; syntax errors become diagnostics, never tracebacks.

The LALR parser is built once per process (python-hcl2's habit) from the one canonical grammar,
which ships inside the wheel as ``loomc/syntax/loom.lark`` and is read from ``grammar/`` in a
source checkout; its tables are cached on disk between processes (:mod:`loomc.syntax.tables`).

lark is imported only when a file has to be parsed: a file that parsed before is read back from
the AST cache (:mod:`loomc.syntax.ast_cache`, keyed by its content), which is most of what a
``loomc check`` after a first one does (importing lark and parsing cost ~60 ms of a ~170 ms
check; reading the cached ASTs back, ~2 ms).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loomc.diagnostics import Diagnostic, Span
from loomc.sources import read_source
from loomc.syntax import ast, ast_cache

if TYPE_CHECKING:
    from lark import Lark, Token, Tree
    from lark.exceptions import UnexpectedInput


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


_HERE = Path(__file__).resolve().parent
_GRAMMAR_CANDIDATES = (_HERE / "loom.lark", _HERE.parents[1] / "grammar" / "loom.lark")

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
    _lark_without_regex()
    from loomc.syntax.tables import build_parser

    parser: Lark = build_parser(grammar_path().read_text(encoding="utf-8"))
    return parser


def parse_file(
    path: str | Path, *, cache: bool = True
) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Read and parse one file; unreadable or binary files are diagnostics too. With ``cache``
    (the default for files) a file parsed before is read back from the AST cache."""
    text, problem = read_source(path, "LOOM103", "file")
    if text is None:
        return None, [problem] if problem else []
    return parse_text(text, str(path), cache=cache)


def parse_text(
    text: str, path: str = "<string>", *, cache: bool = False
) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Parse ``text`` as the file ``path``. With ``cache`` the AST of a text parsed before comes
    from the AST cache, and a text that parses cleanly is stored there; off by default, so
    generated sources (a planner's plans) do not fill the user's cache folder."""
    if cache:
        module = ast_cache.load(text, path)
        if module is not None:
            return module, []
    module, diagnostics = _parse_with_lark(text, path)
    if cache and module is not None:
        ast_cache.store(text, module)
    return module, diagnostics


def _parse_with_lark(text: str, path: str) -> tuple[ast.Module | None, list[Diagnostic]]:
    parser = _parser()
    from lark.exceptions import UnexpectedInput, VisitError

    from loomc.syntax.to_ast import BadLiteral, ToAst

    try:
        tree = parser.parse(text)
    except UnexpectedInput as exc:
        return None, [_syntax_diagnostic(exc, text, path)]
    too_deep = _too_deep(tree, path)
    if too_deep is not None:
        return None, [too_deep]
    try:
        pipelines = ToAst(path).transform(tree)
    except VisitError as exc:  # lark wraps what a transformer method raises
        if isinstance(exc.orig_exc, BadLiteral):
            return None, [exc.orig_exc.diagnostic]
        raise
    return ast.Module(path=path, pipelines=tuple(pipelines), source=text), []


def _too_deep(tree: Tree[Token], path: str) -> Diagnostic | None:
    """The first expression nested past ``MAX_NESTING``, found without recursion: every later
    stage walks expressions recursively, so depth is bounded here, once, with a position."""
    from lark import Tree

    from loomc.syntax.to_ast import diag

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
            return diag(
                "LOOM107",
                f"expression nested deeper than {MAX_NESTING} levels",
                span,
                "split the condition, or drop redundant parentheses and double negations",
            )
        stack.extend((c, level) for c in node.children if isinstance(c, Tree))
    return None


# --- syntax errors ----------------------------------------------------------------------------


def _syntax_diagnostic(exc: UnexpectedInput, text: str, path: str) -> Diagnostic:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    from loomc.syntax.to_ast import diag

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
            return diag(
                "LOOM102", "unterminated triple-quoted string", start, 'close it with \'"""\''
            )
        if ch == '"':
            return diag("LOOM102", "unterminated string", span, "close the string with '\"'")
        return diag("LOOM101", f"unexpected character {ch!r}", span, _expected_hint(exc.allowed))
    if isinstance(exc, UnexpectedEOF):
        return diag("LOOM101", "unexpected end of file", span, _expected_hint(exc.expected))
    assert isinstance(exc, UnexpectedToken)
    token = exc.token
    found = "end of file" if token.type == "$END" else repr(str(token))
    hint = _expected_hint(exc.expected)
    if token.type == "$END" and "RBRACE" in exc.expected:
        return diag("LOOM101", "unexpected end of file: a block is not closed", span, "add '}'")
    return diag("LOOM101", f"unexpected {found}", span, hint)


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


__all__ = ["grammar_path", "parse_file", "parse_text"]
