"""Read a policy's YAML into nodes (for positions) and data, bounded, and fast when it can be.

Both steps are bounded (LOOM607): nesting depth, the size the aliases expand to (a "billion
laughs" file is 2 KB and expands to 10^9 nodes, which every later walk would visit) and the
length of a number (Python refuses to read an int of more than 4,300 digits).

The reference reader is PyYAML's pure-Python one, extended to refuse those shapes as it meets
them, with the position of the offending node: its messages and positions are what users see
and the golden files pin. It is also slow (about 1 ms per 50 lines, the largest single cost of
``loomc check``), so a policy is first read with libyaml (``CSafeLoader``, ~20x faster), and the
result is used only when nothing could differ:

- the text holds only characters both readers treat alike (no tab, BOM, NEL, line or paragraph
  separator, control character; no ``%`` directive line);
- libyaml read it without error, and the nodes pass the same bounds (depth, expansion, numbers).

Anything else — every error, every limit, every unusual character — is read again by the
reference reader, which reports it exactly as before. libyaml's own nesting limit (1,000, since
0.2.6) bounds its recursion on hostile input; older libyaml is not used at all.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

import yaml

MAX_DEPTH = 64
"""The deepest a policy's YAML may nest (mappings and lists)."""
MAX_NODES = 10_000
"""The most nodes a policy may hold once its aliases are expanded."""
MAX_NUMBER_CHARS = 40
"""The longest number a policy may write."""


class Limit(yaml.YAMLError):
    """A structural limit crossed at ``mark``; reported as LOOM607."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


def _short_number(node: Any) -> None:
    if len(str(node.value)) > MAX_NUMBER_CHARS:
        raise Limit(
            f"a number of {len(str(node.value))} characters (at most {MAX_NUMBER_CHARS})",
            node.start_mark,
        )


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses, with a position, what would take unbounded time or stack."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise Limit(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        # PyYAML's scanner keeps a possible key per open bracket and revisits all of them at
        # every token, and it scans ahead of the composer: bound brackets here, where they open
        # (8,000 nested '[' took 3 s before the composer's depth check was reached).
        if self.flow_level >= MAX_DEPTH:
            raise Limit(f"nested deeper than {MAX_DEPTH} levels", self.get_mark())
        super().fetch_flow_collection_start(token_class)

    def construct_yaml_int(self, node: Any) -> Any:
        _short_number(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: Any) -> Any:
        _short_number(node)
        return super().construct_yaml_float(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)
_BoundedLoader.add_constructor("tag:yaml.org,2002:float", _BoundedLoader.construct_yaml_float)


def _libyaml_loader() -> type | None:
    """A CSafeLoader with the same number bounds, when a libyaml that bounds nesting is here."""
    base = getattr(yaml, "CSafeLoader", None)
    try:
        from yaml import _yaml

        version = tuple(_yaml.get_version())
    except (ImportError, AttributeError):
        return None
    if base is None or version < (0, 2, 6):
        return None

    class _FastLoader(base):  # type: ignore[valid-type,misc]
        def construct_yaml_int(self, node: Any) -> Any:
            _short_number(node)
            return super().construct_yaml_int(node)

        def construct_yaml_float(self, node: Any) -> Any:
            _short_number(node)
            return super().construct_yaml_float(node)

    _FastLoader.add_constructor("tag:yaml.org,2002:int", _FastLoader.construct_yaml_int)
    _FastLoader.add_constructor("tag:yaml.org,2002:float", _FastLoader.construct_yaml_float)
    return _FastLoader


_FAST_LOADER = _libyaml_loader()

# What both readers surely treat alike: printable characters and newlines (and CR LF); no tab,
# BOM, NEL, U+2028/U+2029, control or surrogate; no directive line (`%YAML 1.3`), no tag (`!x`);
# no `?` but in a comment line or a quoted string (libyaml reads `a?b` in `[...]` as one scalar,
# PyYAML as an error: checked on libyaml's nodes, see `_quoted_only`); no empty value in a flow collection (`{a: }`: libyaml puts its null a column later);
# a last line that ends (libyaml ends a collection at EOF one line later than PyYAML); and no
# `#` straight after a block scalar's header (`a: |#x`: libyaml reads a comment, PyYAML, as the
# spec, an error: a comment needs a space before it).
#
# The characters are checked apart from the shapes: as one regex, the class of usual characters
# (printable ASCII, \xa0-\u2027, \u202a-\ud7ff, \ue000-\ufefe, \uff00-\ufffd, the astral planes)
# took ~15 ms to compile, in every process that read a policy; the ranges compared in Python
# cost nothing to set up and a few microseconds per distinct character of the text.
_UNUSUAL_SHAPE = re.compile(
    "\r(?!\n)|^%|(?:^|[\\s\\[\\]{},:])!|:[ \r\n]*[,}\\]]|[^\n]\\Z|[|>][-+0-9]{0,2}#",
    re.MULTILINE,
)
_UNUSUAL_ASCII = re.compile("[^\n\r\x20-\x7e]")
_COMMENT_LINE = re.compile("^[ ]*#", re.MULTILINE)


def _usual_char(ch: str) -> bool:
    return (
        ch in "\n\r"
        or " " <= ch <= "~"
        or "\xa0" <= ch <= "\u2027"
        or "\u202a" <= ch <= "\ud7ff"
        or "\ue000" <= ch <= "\ufefe"
        or "\uff00" <= ch <= "\ufffd"
        or ch >= "\U00010000"
    )


def _usual(text: str) -> bool:
    """Whether libyaml and PyYAML surely read ``text`` alike, but for the ``?`` that
    :func:`_questions` lists, which must lie in quoted scalars (see above)."""
    if _UNUSUAL_SHAPE.search(text):
        return False
    if text.isascii():
        return not _UNUSUAL_ASCII.search(text)
    return all(_usual_char(ch) for ch in set(text))


def _questions(text: str) -> list[int]:
    """Offsets of the ``?`` outside comment lines. The text is read once: each ``?`` looks
    for a newline only back to the ``?`` before it, and each line is checked for a comment
    once (a line of 40,000 spaces and 40,000 ``?`` was quadratic: ~1 s, 160,000 ~4 s)."""
    out = []
    seen = 0  # the text before here has been looked at for newlines
    comment = _COMMENT_LINE.match(text, 0) is not None  # the current line's
    at = text.find("?")
    while at != -1:
        newline = text.rfind("\n", seen, at)
        if newline != -1:  # a new line since the last ``?``
            comment = _COMMENT_LINE.match(text, newline + 1) is not None
        if not comment:
            out.append(at)
        seen = at
        at = text.find("?", at + 1)
    return out


def _quoted_only(root: Any, questions: list[int]) -> None:
    """Refuse (to the reference reader) a ``?`` that libyaml did not read inside a quoted
    scalar: inside quotes both readers take it as text; elsewhere they may not agree."""
    if not questions:
        return
    spans = []
    stack = [root]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode) and node.style in ("'", '"'):
            spans.append((node.start_mark.index, node.end_mark.index))
        stack.extend(_children(node))
    spans.sort()
    starts = [a for a, _ in spans]
    for at in questions:
        i = bisect.bisect_right(starts, at) - 1
        if i < 0 or not spans[i][0] < at < spans[i][1] - 1:
            raise Limit("a ? outside quotes", root.start_mark)


def compose_and_construct(text: str) -> tuple[Any, Any]:
    """One read: the node tree (for positions) and the data built from the same nodes, or the
    reference reader's error (``Limit`` for LOOM607, another ``yaml.YAMLError`` otherwise)."""
    if _FAST_LOADER is not None and _usual(text):
        try:
            return _read(_FAST_LOADER, text, fast=True, questions=_questions(text))
        except Exception:  # any doubt: the reference reader decides and reports
            pass
    return _read(_BoundedLoader, text, fast=False)


def _read(
    loader_class: Any, text: str, fast: bool, questions: list[int] | None = None
) -> tuple[Any, Any]:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            if fast and questions:
                raise Limit("a ? in an empty document", None)
            return None, None
        expanded_size(node)
        if fast:
            _shallow_enough(node)
            _quoted_only(node, questions or [])
        return node, loader.construct_document(node)
    finally:
        loader.dispose()


def expanded_size(root: Any) -> None:
    """Count the nodes ``root`` stands for with aliases expanded, memoised per node, so the
    count itself is linear; refuse past ``MAX_NODES`` (and a node that contains itself)."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_NODES:
                raise Limit(f"aliases expand to more than {MAX_NODES:,} nodes", node.start_mark)
            continue
        if key in sizes:
            continue
        if key in open_:
            raise Limit("an alias refers to a node that contains it", node.start_mark)
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)


def _shallow_enough(root: Any) -> None:
    """Refuse (to the reference reader) a tree with a node deeper than ``MAX_DEPTH``; aliases are
    walked expanded, which can only over-count, and ``expanded_size`` bounded the walk."""
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Limit("too deep", node.start_mark)
        stack.extend((c, depth + 1) for c in _children(node))


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


__all__ = ["MAX_DEPTH", "MAX_NODES", "MAX_NUMBER_CHARS", "Limit", "compose_and_construct"]
