"""Prompt/target text of `loom-conductor-v2` and first-JSON-object extraction.

Shared by the generator (which must reproduce the published prompts byte for byte) and by the
learned planner (which must feed a model exactly what it was trained on).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile, canonical_json

__all__ = [
    "INSTRUCTION",
    "OUTPUT_SCHEMA",
    "build_prompt",
    "canonical_json",
    "extract_first_json",
    "read_jsonl",
    "row_json",
    "write_jsonl",
]

INSTRUCTION = (
    "You are the Dot Loom conductor. Select the highest-utility execution plan that obeys all "
    "hard call, credit, and latency limits. Use cheap workers when sufficient. Require an "
    "independent provider when consequences and verification needs justify it. Return exactly "
    "one compact JSON object and no prose."
)

OUTPUT_SCHEMA: dict[str, Any] = {
    "access": {"finalizer": [], "reviewer": [], "writer": []},
    "estimated_credits": "number",
    "estimated_latency_ms": "integer",
    "estimated_pass_rate": "number",
    "estimated_quality": "number",
    "finalizer": "worker id|null",
    "independent_verification": "boolean",
    "max_calls": "integer",
    "max_credits": "number",
    "max_latency_ms": "integer",
    "policy": "lean|balanced|strict",
    "reason_codes": ["bounded machine-readable codes"],
    "reviewer": "worker id|null",
    "writer": "worker id",
}

_DECODER = json.JSONDecoder()


def row_json(value: Any) -> str:
    """One corpus line: sorted keys, default `, `/`: ` separators, ASCII only (no newline)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True)


def _task_dict(task: TaskProfile | Mapping[str, Any]) -> dict[str, Any]:
    data = task.to_dict() if isinstance(task, TaskProfile) else dict(task)
    data.pop("request_id", None)  # the prompt never carries the request id
    return data


def build_prompt(
    task: TaskProfile | Mapping[str, Any],
    constraints: Constraints | Mapping[str, Any],
    workers: Sequence[WorkerProfile | Mapping[str, Any]],
) -> str:
    """The exact v2 prompt (ends right after `OUTPUT=`); accepts dataclasses or row dicts."""
    payload = {
        "task": _task_dict(task),
        "constraints": (
            constraints.to_dict() if isinstance(constraints, Constraints) else dict(constraints)
        ),
        "workers": [w.to_dict() if isinstance(w, WorkerProfile) else dict(w) for w in workers],
    }
    return (
        f"{INSTRUCTION}\nINPUT={canonical_json(payload)}"
        f"\nOUTPUT_SCHEMA={canonical_json(OUTPUT_SCHEMA)}\nOUTPUT="
    )


def extract_first_json(text: str) -> dict[str, Any] | None:
    """The first JSON object decodable at some `{` (trailing text ignored), else None."""
    index = text.find("{")
    while index != -1:
        try:
            value, _ = _DECODER.raw_decode(text, index)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        index = text.find("{", index + 1)
    return None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, object)` for each non-blank line; errors name `file:line`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text: {exc.reason}") from None
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}:{exc.colno}: invalid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object")
        yield number, value


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a bad line raises ValueError naming `file:line`."""
    return [row for _, row in iter_jsonl(path)]


def iter_lines(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield row_json(row) + "\n"


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Row-JSON lines, UTF-8, `\\n`-terminated (the published corpus layout)."""
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(iter_lines(rows))
