"""The AST of each `.loom` file that parsed cleanly, kept between processes, keyed by content.

A ``loomc check`` spends most of its parsing time importing lark and running its lexer; the
files it reads rarely change between two checks. So the AST of a file that parsed without a
diagnostic is saved as JSON (data that cannot run code, unlike the pickled parser tables) under
``<cache folder>/ast/<key>.json``, the key being the SHA-256 of the text together with the
fingerprint of everything the AST depends on: this format's version, loomc's version, the
grammar and the source of the modules that build the AST (a changed grammar or a new AST node
gets a new key, never a stale tree). Spans are stored without their file name, which is the
path the text is read under, so a moved or copied file hits as well.

A cache entry can only ever save time: one that is missing, truncated, corrupted, from another
format or unreadable is a miss (the file is parsed again and the entry replaced), because each
entry carries the key it was written for and the SHA-256 of its payload, both checked before a
byte of it is decoded. Texts with a syntax error are never stored, so their diagnostics always
come from the parser itself, nor are texts holding a key-shaped string (LOOM606 reports them;
the cache folder gets no copy). Entries are written to a temporary name and renamed (a concurrent
reader sees a whole entry or none) into a folder that belongs to the current user and nobody
else may write to; a read-only home or a full disk just means no entry.

Folder, entry format, checks and pruning are :mod:`loomc.cache`'s (``LOOMC_CACHE_DIR``, else
``$XDG_CACHE_HOME/loomc`` or ``~/.cache/loomc``; ``LOOMC_NO_CACHE=1`` turns it off).
"""

from __future__ import annotations

import functools
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from loomc import __version__, cache
from loomc.diagnostics import Span
from loomc.secrets import looks_like_key
from loomc.syntax import ast

FORMAT = "loomc-ast-1"
"""The first word of every entry; a change of encoding changes it (and so every key)."""

_SOURCES = ("ast.py", "to_ast.py", "parser.py", "ast_cache.py", "../frozen.py", "../units.py")
"""The modules whose code decides what AST a text becomes (part of the key; `units.py` holds
the duration factors quantities are normalised with)."""


@functools.cache
def fingerprint() -> bytes:
    """What every AST depends on besides the text: the format, loomc's version, the grammar and
    the code that builds the tree (read once per process, a few KiB)."""
    from loomc.syntax.parser import grammar_path

    digest = cache.sha256(f"{FORMAT}\0{__version__}\0".encode())
    here = Path(__file__).resolve().parent
    for path in (grammar_path(), *(here / name for name in _SOURCES)):
        try:
            digest.update(path.read_bytes())
        except OSError:  # a module without its source (a zip import): the version must do
            digest.update(path.name.encode())
        digest.update(b"\0")
    return digest.digest()


def key(text: str) -> str:
    return cache.content_key(fingerprint(), text)


# --- reading ----------------------------------------------------------------------------------


def load(text: str, path: str) -> ast.Module | None:
    """The cached AST of ``text`` read as the file ``path``, or None on any kind of miss."""
    where = cache.folder("ast")
    if where is None:
        return None
    payload = cache.read(where, FORMAT, key(text))
    if payload is None:
        return None
    try:
        pipelines = json.loads(payload)
        return ast.Module(path, tuple(_Decoder(path).pipeline(p) for p in pipelines), text)
    except Exception:  # an entry this decoder did not write: parse the text instead
        return None


class _Decoder:
    """The inverse of :class:`_Encoder`, node by node (raises on anything it did not write)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def span(self, s: list[Any]) -> Span:
        if len(s) == 4:
            return Span(self.path, s[0], s[1], s[2], s[3])
        line, column, end_line, end_column, file = s
        return Span(file, line, column, end_line, end_column)

    def maybe_span(self, s: list[Any] | None) -> Span | None:
        return None if s is None else self.span(s)

    def name(self, n: list[Any]) -> ast.Name:
        return ast.Name(n[0], self.span(n[1]))

    def string(self, n: list[Any] | None) -> ast.Str | None:
        return None if n is None else ast.Str(n[0], self.span(n[1]))

    def quantity(self, n: list[Any] | None) -> ast.Quantity | None:
        if n is None:
            return None
        value, unit, text, span = n
        return ast.Quantity(Decimal(value), unit, text, self.span(span))

    def _quantity(self, n: list[Any]) -> ast.Quantity:
        found = self.quantity(n)
        assert found is not None
        return found

    def expr(self, n: list[Any] | None) -> ast.ExprNode | None:
        if n is None:
            return None
        tag = n[0]
        if tag == "d":
            return ast.Dotted(tuple(n[1]), self.span(n[2]))
        if tag == "l":
            return ast.Literal(n[1], self.span(n[2]))
        if tag == "c":
            return ast.CompareExpr(n[1], self._expr(n[2]), self._expr(n[3]), self.span(n[4]))
        if tag == "in":
            return ast.ContainsExpr(self._expr(n[1]), self._expr(n[2]), self.span(n[3]))
        if tag == "m":
            pattern = self.string(n[2])
            assert pattern is not None
            return ast.MatchesExpr(self._expr(n[1]), pattern, self.span(n[3]))
        if tag == "b":
            return ast.BoolExpr(n[1], tuple(self._expr(i) for i in n[2]), self.span(n[3]))
        if tag == "n":
            return ast.NotExpr(self._expr(n[1]), self.span(n[2]))
        raise ValueError(f"unknown node {tag!r}")

    def _expr(self, n: list[Any]) -> ast.ExprNode:
        found = self.expr(n)
        assert found is not None
        return found

    def step(self, n: list[Any]) -> ast.StepDecl:
        name, role, worker, sees, after, when, task, max_tokens, timeout, retries, span, dup = n
        return ast.StepDecl(
            name=self.name(name),
            role=self.name(role),
            worker=self.name(worker),
            sees=tuple(ast.SeesItem(self.name(s), bool(optional)) for s, optional in sees),
            after=tuple(self.name(a) for a in after),
            when=self.expr(when),
            task=self.string(task),
            max_tokens=self.quantity(max_tokens),
            timeout=self.quantity(timeout),
            retries=self.quantity(retries),
            span=self.span(span),
            duplicates=tuple(self.span(d) for d in dup),
        )

    def pipeline(self, n: list[Any]) -> ast.PipelineDecl:
        (name, instruction, limits, tiers, kind, inputs, steps, requires, answer) = n[:9]
        answer_span, span, duplicates = n[9:]
        return ast.PipelineDecl(
            name=self.name(name),
            instruction=self.string(instruction),
            limits=tuple(
                ast.Limit(self.name(d), self._quantity(q), self.span(s)) for d, q, s in limits
            ),
            tiers=None if tiers is None else tuple(self.name(t) for t in tiers),
            kind=None if kind is None else self.name(kind),
            input_tokens=self.quantity(inputs),
            steps=tuple(self.step(s) for s in steps),
            requires=tuple(
                ast.RequireDecl(self.name(k), tuple(self.name(s) for s in names), self.span(sp))
                for k, names, sp in requires
            ),
            answer=tuple(self.name(a) for a in answer),
            answer_span=self.maybe_span(answer_span),
            span=self.span(span),
            duplicates=tuple((str(what), self.span(s)) for what, s in duplicates),
        )


# --- writing ----------------------------------------------------------------------------------


def store(text: str, module: ast.Module) -> None:
    """Save ``module`` (parsed from ``text`` without a diagnostic) for later processes; any
    failure to write is ignored."""
    where = cache.folder("ast")
    if where is None or looks_like_key(text):  # a key (LOOM606) is not copied anywhere
        return
    try:
        payload = encode(module)
    except (TypeError, ValueError):  # a node this encoder does not know: just do not cache
        return
    cache.write(where, FORMAT, key(text), payload)


def encode(module: ast.Module) -> bytes:
    """The module's pipelines as compact JSON, spans relative to ``module.path``."""
    coder = _Encoder(module.path)
    pipelines = [coder.pipeline(p) for p in module.pipelines]
    return json.dumps(pipelines, separators=(",", ":")).encode("ascii")


class _Encoder:
    def __init__(self, path: str) -> None:
        self.path = path

    def span(self, s: Span) -> list[Any]:
        if s.file == self.path:
            return [s.line, s.column, s.end_line, s.end_column]
        return [s.line, s.column, s.end_line, s.end_column, s.file]

    def maybe_span(self, s: Span | None) -> list[Any] | None:
        return None if s is None else self.span(s)

    def name(self, n: ast.Name) -> list[Any]:
        return [n.value, self.span(n.span)]

    def string(self, n: ast.Str | None) -> list[Any] | None:
        return None if n is None else [n.value, self.span(n.span)]

    def quantity(self, q: ast.Quantity | None) -> list[Any] | None:
        if q is None:
            return None
        return [str(q.value), q.unit, q.text, self.span(q.span)]

    def expr(self, e: ast.ExprNode | None) -> list[Any] | None:
        if e is None:
            return None
        if isinstance(e, ast.Dotted):
            return ["d", list(e.parts), self.span(e.span)]
        if isinstance(e, ast.Literal):
            if not isinstance(e.value, str | int | float):  # bool is an int
                raise TypeError(type(e.value))
            return ["l", e.value, self.span(e.span)]
        if isinstance(e, ast.CompareExpr):
            return ["c", e.op, self.expr(e.left), self.expr(e.right), self.span(e.span)]
        if isinstance(e, ast.ContainsExpr):
            return ["in", self.expr(e.item), self.expr(e.collection), self.span(e.span)]
        if isinstance(e, ast.MatchesExpr):
            return ["m", self.expr(e.subject), self.string(e.pattern), self.span(e.span)]
        if isinstance(e, ast.BoolExpr):
            return ["b", e.op, [self.expr(i) for i in e.items], self.span(e.span)]
        if isinstance(e, ast.NotExpr):
            return ["n", self.expr(e.item), self.span(e.span)]
        raise TypeError(type(e))

    def step(self, s: ast.StepDecl) -> list[Any]:
        return [
            self.name(s.name),
            self.name(s.role),
            self.name(s.worker),
            [[self.name(i.name), i.optional] for i in s.sees],
            [self.name(a) for a in s.after],
            self.expr(s.when),
            self.string(s.task),
            self.quantity(s.max_tokens),
            self.quantity(s.timeout),
            self.quantity(s.retries),
            self.span(s.span),
            [self.span(d) for d in s.duplicates],
        ]

    def pipeline(self, p: ast.PipelineDecl) -> list[Any]:
        return [
            self.name(p.name),
            self.string(p.instruction),
            [
                [self.name(li.dimension), self.quantity(li.quantity), self.span(li.span)]
                for li in p.limits
            ],
            None if p.tiers is None else [self.name(t) for t in p.tiers],
            None if p.kind is None else self.name(p.kind),
            self.quantity(p.input_tokens),
            [self.step(s) for s in p.steps],
            [
                [self.name(r.kind), [self.name(s) for s in r.steps], self.span(r.span)]
                for r in p.requires
            ],
            [self.name(a) for a in p.answer],
            self.maybe_span(p.answer_span),
            self.span(p.span),
            [[what, self.span(s)] for what, s in p.duplicates],
        ]
