"""JSONL eval datasets, compatible with the reference runtime's suites. Every malformed line is
reported (not just the first) so a suite author fixes a file in one pass."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loomc.errors import LoomcError
from loomc.eval.checks import CheckError, validate_check
from loomc.eval.positions import column_of


class DatasetError(LoomcError):
    """All problems in one dataset file, each as `file:line:col: what is wrong`."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("\n".join(messages))
        self.messages = messages


@dataclass(frozen=True)
class Case:
    id: str
    prompt: str
    pipeline: str | None = None
    difficulty: str | None = None
    rubric: str | None = None
    checks: tuple[dict[str, Any], ...] = ()
    expected_escalation: bool | None = None
    line: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


_KNOWN = {"id", "prompt", "pipeline", "difficulty", "rubric", "checks", "expectedEscalation"}


Problem = tuple[tuple[str | int, ...], str]
"""A row's problem: the path of the value it is about (``()``: the row) and what is wrong."""


def _parse_case(obj: Any, line: int) -> tuple[Case | None, list[Problem]]:
    errs: list[Problem] = []
    if not isinstance(obj, dict):
        found = f"expected a JSON object, got {type(obj).__name__}"
        if isinstance(obj, list):  # most often a whole JSON array saved as a .jsonl
            found += " (a dataset is JSONL: one JSON object per line)"
        return None, [((), found)]
    cid, prompt = obj.get("id"), obj.get("prompt")
    if not isinstance(cid, str) or not cid.strip():
        errs.append((("id",), "'id' must be a non-empty string"))
    if not isinstance(prompt, str) or not prompt.strip():
        errs.append((("prompt",), "'prompt' must be a non-empty string"))
    for key in ("pipeline", "difficulty", "rubric"):
        if key in obj and obj[key] is not None and not isinstance(obj[key], str):
            errs.append(((key,), f"'{key}' must be a string"))
    esc = obj.get("expectedEscalation")
    if esc is not None and not isinstance(esc, bool):
        errs.append((("expectedEscalation",), "'expectedEscalation' must be true or false"))
    checks = obj.get("checks", [])
    if not isinstance(checks, list):
        errs.append((("checks",), "'checks' must be a list"))
        checks = []
    for i, chk in enumerate(checks):
        try:
            validate_check(chk)
        except CheckError as exc:
            errs.append((("checks", i), f"checks[{i}]: {exc}"))
    if errs:
        return None, errs
    return (
        Case(
            id=str(cid),
            prompt=str(prompt),
            pipeline=obj.get("pipeline"),
            difficulty=obj.get("difficulty"),
            rubric=obj.get("rubric"),
            checks=tuple(checks),
            expected_escalation=esc,
            line=line,
            extra={k: v for k, v in obj.items() if k not in _KNOWN},
        ),
        [],
    )


def _located(where: str, raw: str, path: tuple[str | int, ...], message: str) -> str:
    """``file:line:col: message``, the column that of the value at ``path`` (the row's first
    character where the path is absent, e.g. a missing key)."""
    column = column_of(raw, path) or column_of(raw) or 1
    return f"{where}:{column}: {message}"


MAX_DEPTH = 32
"""The deepest a dataset line may nest (a case is an object of strings and a list of checks)."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _nesting_problem(obj: Any) -> tuple[tuple[str | int, ...], str] | None:
    """Too deep or holding a lone surrogate (JSON's ``"\\ud800"``, which no UTF-8 file, journal
    or terminal can carry), with the row's key it was found under: found without recursion."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(obj, 0, ())]
    while stack:
        node, depth, top = stack.pop()
        if depth > MAX_DEPTH:
            return top, f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(node, str):
            bad = _SURROGATE.search(node)
            if bad:
                found = f"a lone surrogate \\u{ord(bad.group()):04x} in a string (not Unicode text)"
                return top, found
        elif isinstance(node, dict):
            stack.extend((k, depth + 1, top or (k,)) for k in node)
            stack.extend((v, depth + 1, top or (k,)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, depth + 1, top or (i,)) for i, v in enumerate(node))
    return None


def parse_dataset(text: str, name: str) -> list[Case]:
    """Parse JSONL text; blank and `#` lines are skipped; raise DatasetError with every problem."""
    cases: list[Case] = []
    errs: list[str] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{name}:{lineno}"
        indent = len(raw) - len(raw.lstrip())
        row = f"{where}:{indent + 1}"
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            errs.append(f"{where}:{indent + exc.colno}: invalid JSON: {exc.msg}")
            continue
        except RecursionError:
            errs.append(f"{row}: nested deeper than {MAX_DEPTH} levels")
            continue
        except ValueError:  # an integer past Python's 4,300-digit conversion limit
            errs.append(f"{row}: a number too long to read (more than 4,300 digits)")
            continue
        problem = _nesting_problem(obj)
        if problem is not None:
            errs.append(_located(where, raw, *problem))
            continue
        case, problems = _parse_case(obj, lineno)
        errs.extend(_located(where, raw, path, message) for path, message in problems)
        if case is None:
            continue
        if case.id in seen:
            errs.append(
                _located(
                    where,
                    raw,
                    ("id",),
                    f"duplicate id {case.id!r} (first defined on line {seen[case.id]})",
                )
            )
            continue
        seen[case.id] = lineno
        cases.append(case)
    if errs:
        raise DatasetError(errs)
    if not cases:
        raise DatasetError([f"{name}: dataset has no cases"])
    return cases


def load_dataset(path: Path, limit: int | None = None) -> list[Case]:
    """Read and parse a dataset; the first ``limit`` cases (a positive number) when given."""
    if limit is not None and limit < 1:
        raise DatasetError([f"{path}: --limit must be a positive number of cases, not {limit}"])
    cases = parse_dataset(read_text(path), str(path))
    return cases[:limit] if limit is not None else cases


def read_text(path: Path) -> str:
    """A dataset's text: UTF-8 (a BOM is allowed); binary, UTF-16 and other encodings are a
    one-line error naming the line, never a traceback."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise DatasetError([f"{path}: cannot read dataset: {exc.strerror or exc}"]) from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DatasetError([f"{path}:1: dataset is UTF-16; save it as UTF-8"])
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise DatasetError([f"{path}:{line}: dataset is binary (a NUL byte), not JSONL text"])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetError(
            [
                f"{path}:{line}:{column}: dataset is not UTF-8 (byte 0x{raw[exc.start]:02x}); "
                "save it as UTF-8"
            ]
        ) from None
