"""Prompt text of `loom-conductor-v2` and first-JSON-object extraction.

Shared by the learned planner (which must feed a model exactly what it was trained on), the guard
(which parses a proposal) and the research corpus generator (which must reproduce the published
prompts byte for byte).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile, canonical_json
from loomc.text import json_objects

__all__ = ["INSTRUCTION", "OUTPUT_SCHEMA", "build_prompt", "extract_first_json", "prompt_of"]

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


def prompt_of(row: Mapping[str, Any]) -> str:
    """The exact v2 prompt of a corpus row: its `prompt` string, else rebuilt from its fields."""
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        return prompt
    return build_prompt(row["task"], row["constraints"], row["workers"])


def extract_first_json(text: str) -> dict[str, Any] | None:
    """The first JSON object decodable at some `{` (trailing text ignored), else None; bounded
    against hostile nesting by :func:`loomc.text.json_objects`."""
    return next(json_objects(text), None)
