"""Load a YAML policy into a validated `Policy`, reporting problems as diagnostics with lines.

pydantic errors carry a location path (``workers.drafter.model``); we map that path back to the
YAML node's line and column so a policy error points at the file like a syntax error does.

The YAML is composed once into nodes (positions) and those nodes are constructed into data, and
both steps are bounded (LOOM607): nesting depth, the size the aliases expand to (a "billion
laughs" file is 2 KB and expands to 10^9 nodes, which every later walk would visit) and the
length of a number (Python refuses to read an int of more than 4,300 digits).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.policy.models import Policy
from loomc.sources import read_source


class PolicySource:
    """A parsed policy plus where each YAML key was written, for later diagnostics."""

    def __init__(self, path: str, policy: Policy, positions: dict[tuple[str, ...], Span]) -> None:
        self.path = path
        self.policy = policy
        self.positions = positions

    def span(self, *path: str) -> Span:
        """The span of the deepest written prefix of ``path`` (the file start if none)."""
        for n in range(len(path), 0, -1):
            found = self.positions.get(tuple(path[:n]))
            if found is not None:
                return found
        return Span.point(self.path)


def load_policy(path: str | Path) -> tuple[PolicySource | None, list[Diagnostic]]:
    text, problem = read_source(path, "LOOM602", "policy file")
    if text is None:
        return None, [problem] if problem else []
    return load_policy_text(text, str(path))


MAX_DEPTH = 64
"""The deepest a policy's YAML may nest (mappings and lists)."""
MAX_NODES = 10_000
"""The most nodes a policy may hold once its aliases are expanded."""
MAX_NUMBER_CHARS = 40
"""The longest number a policy may write."""


class _Limit(yaml.YAMLError):
    """A structural limit crossed at ``mark``; reported as LOOM607."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


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
                raise _Limit(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        # PyYAML's scanner keeps a possible key per open bracket and revisits all of them at
        # every token, and it scans ahead of the composer: bound brackets here, where they open
        # (8,000 nested '[' took 3 s before the composer's depth check was reached).
        if self.flow_level >= MAX_DEPTH:
            raise _Limit(f"nested deeper than {MAX_DEPTH} levels", self.get_mark())
        super().fetch_flow_collection_start(token_class)

    def construct_yaml_int(self, node: Any) -> Any:
        _short_number(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: Any) -> Any:
        _short_number(node)
        return super().construct_yaml_float(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)
_BoundedLoader.add_constructor("tag:yaml.org,2002:float", _BoundedLoader.construct_yaml_float)


def _short_number(node: Any) -> None:
    if len(str(node.value)) > MAX_NUMBER_CHARS:
        raise _Limit(
            f"a number of {len(str(node.value))} characters (at most {MAX_NUMBER_CHARS})",
            node.start_mark,
        )


def _expanded_size(root: Any) -> None:
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
                raise _Limit(f"aliases expand to more than {MAX_NODES:,} nodes", node.start_mark)
            continue
        if key in sizes:
            continue
        if key in open_:
            raise _Limit("an alias refers to a node that contains it", node.start_mark)
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _compose_and_construct(text: str) -> tuple[Any, Any]:
    """One parse: the node tree (for positions) and the data built from the same nodes."""
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        _expanded_size(node)
        return node, loader.construct_document(node)
    finally:
        loader.dispose()


def load_policy_text(text: str, name: str) -> tuple[PolicySource | None, list[Diagnostic]]:
    try:
        node, data = _compose_and_construct(text)
    except _Limit as exc:
        mark = exc.problem_mark
        span = Span.point(name, mark.line + 1, mark.column + 1)
        return None, [_err("LOOM607", f"policy too large or too deep: {exc.problem}", span)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        col = mark.column + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, [_err("LOOM602", f"malformed YAML: {problem}", Span.point(name, line, col))]
    positions: dict[tuple[str, ...], Span] = {}
    if node is not None:
        _index(node, (), name, positions)
    if not isinstance(data, dict):
        return None, [_err("LOOM603", "a policy must be a YAML mapping", Span.point(name))]
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        diags = []
        for error in exc.errors():
            loc = tuple(str(p) for p in error["loc"])
            span = _lookup(positions, loc, name)
            where = ".".join(loc) or "policy"
            diags.append(_err("LOOM603", f"{where}: {error['msg']}", span))
        return None, diags
    return PolicySource(name, policy, positions), []


def _lookup(positions: dict[tuple[str, ...], Span], loc: tuple[str, ...], name: str) -> Span:
    for n in range(len(loc), 0, -1):
        if loc[:n] in positions:
            return positions[loc[:n]]
    return Span.point(name)


def _index(node: Any, path: tuple[str, ...], name: str, out: dict[tuple[str, ...], Span]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            sub = (*path, str(key.value))
            start, end = key.start_mark, value.end_mark
            out[sub] = Span(name, start.line + 1, start.column + 1, end.line + 1, end.column + 1)
            _index(value, sub, name, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            sub = (*path, str(i))
            start, end = item.start_mark, item.end_mark
            out[sub] = Span(name, start.line + 1, start.column + 1, end.line + 1, end.column + 1)
            _index(item, sub, name, out)


def _err(code: str, message: str, span: Span) -> Diagnostic:
    return Diagnostic(code=code, severity=Severity.ERROR, message=message, span=span)
