"""JSONL eval datasets, compatible with the reference runtime's suites. Every malformed line is
reported (not just the first) so a suite author fixes a file in one pass."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loomc.errors import LoomcError
from loomc.eval.checks import CheckError, validate_check


class DatasetError(LoomcError):
    """All problems in one dataset file, each as `file:line: what is wrong`."""

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


def _parse_case(obj: Any, where: str, line: int) -> tuple[Case | None, list[str]]:
    errs: list[str] = []
    if not isinstance(obj, dict):
        return None, [f"{where}: expected a JSON object, got {type(obj).__name__}"]
    cid, prompt = obj.get("id"), obj.get("prompt")
    if not isinstance(cid, str) or not cid.strip():
        errs.append(f"{where}: 'id' must be a non-empty string")
    if not isinstance(prompt, str) or not prompt.strip():
        errs.append(f"{where}: 'prompt' must be a non-empty string")
    for key in ("pipeline", "difficulty", "rubric"):
        if key in obj and obj[key] is not None and not isinstance(obj[key], str):
            errs.append(f"{where}: '{key}' must be a string")
    esc = obj.get("expectedEscalation")
    if esc is not None and not isinstance(esc, bool):
        errs.append(f"{where}: 'expectedEscalation' must be true or false")
    checks = obj.get("checks", [])
    if not isinstance(checks, list):
        errs.append(f"{where}: 'checks' must be a list")
        checks = []
    for i, chk in enumerate(checks):
        try:
            validate_check(chk)
        except CheckError as exc:
            errs.append(f"{where}: checks[{i}]: {exc}")
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
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            errs.append(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        case, problems = _parse_case(obj, where, lineno)
        errs.extend(problems)
        if case is None:
            continue
        if case.id in seen:
            errs.append(
                f"{where}: duplicate id {case.id!r} (first defined on line {seen[case.id]})"
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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError([f"{path}: cannot read dataset: {exc.strerror}"]) from None
    cases = parse_dataset(text, str(path))
    return cases[:limit] if limit is not None else cases
