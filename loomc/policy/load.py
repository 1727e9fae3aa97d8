"""Load a YAML policy into a validated `Policy`, reporting problems as diagnostics with lines.

Validation errors (pydantic's, see :mod:`loomc.policy.record`) carry a location path (``workers.drafter.model``); we map that path back to the
YAML node's line and column so a policy error points at the file like a syntax error does.

The YAML is composed once into nodes (positions) and those nodes are constructed into data, both
steps bounded (LOOM607), by :mod:`loomc.policy.bounded_yaml`. A policy file read before comes
back as data and positions from :mod:`loomc.policy.cached` without importing yaml; it is
validated all the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.policy import cached
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


def load_policy(
    path: str | Path, *, cache: bool = True
) -> tuple[PolicySource | None, list[Diagnostic]]:
    """Read and validate one policy file (``cache``: its YAML read back from the policy cache
    when the same bytes were read before)."""
    if Path(path).suffix == ".json":  # a reference-runtime config, converted in memory
        from loomc.policy.importer import load_config

        return load_config(Path(path))
    text, problem = read_source(path, "LOOM602", "policy file")
    if text is None:
        return None, [problem] if problem else []
    return load_policy_text(text, str(path), cache=cache)


def load_policy_text(
    text: str, name: str, *, cache: bool = False
) -> tuple[PolicySource | None, list[Diagnostic]]:
    found = cached.load(text, name) if cache else None
    if found is None:
        read = _read_yaml(text, name)
        if isinstance(read, list):
            return None, read
        data, positions = read
        if cache:
            cached.store(text, data, positions)
    else:
        data, positions = found
    if not isinstance(data, dict):
        return None, [_err("LOOM603", "a policy must be a YAML mapping", Span.point(name))]
    return _validate(data, positions, name)


def _read_yaml(text: str, name: str) -> tuple[Any, dict[tuple[str, ...], Span]] | list[Diagnostic]:
    """The YAML's data and the position of each key, or the diagnostic that stops reading."""
    import yaml

    from loomc.policy.bounded_yaml import Limit, compose_and_construct

    try:
        node, data = compose_and_construct(text)
    except Limit as exc:
        mark = exc.problem_mark
        span = Span.point(name, mark.line + 1, mark.column + 1)
        return [_err("LOOM607", f"policy too large or too deep: {exc.problem}", span)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        col = mark.column + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return [_err("LOOM602", f"malformed YAML: {problem}", Span.point(name, line, col))]
    positions: dict[tuple[str, ...], Span] = {}
    if node is not None:
        _index(node, (), name, positions)
    return data, positions


def _validate(
    data: dict[str, Any], positions: dict[tuple[str, ...], Span], name: str
) -> tuple[PolicySource | None, list[Diagnostic]]:
    try:
        policy = Policy.model_validate(data)
    except ValueError as exc:  # pydantic (imported only once a policy needs it) or not ours
        from pydantic import ValidationError

        if not isinstance(exc, ValidationError):
            raise
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
    import yaml

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
