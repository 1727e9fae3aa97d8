"""Typed conductor plans and the profiles a planner reads.

A planner's output is untrusted until the checker recomputes it, so `Plan.from_json` is strict
(every `loom-conductor-v2` label key, exact types) and fails with a typed `PlanParseError` whose
`reason` is a short machine-readable code; `Plan.to_json` emits the label schema byte for byte
(canonical JSON, the same as a corpus `target`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from loomc.errors import LoomcError

Policy = Literal["lean", "balanced", "strict"]
POLICIES: tuple[Policy, ...] = ("lean", "balanced", "strict")
POLICY_CALLS: dict[str, int] = {"lean": 1, "balanced": 2, "strict": 3}
ROLES: tuple[str, ...] = ("writer", "reviewer", "finalizer")

LABEL_KEYS: frozenset[str] = frozenset(
    {
        "access",
        "estimated_credits",
        "estimated_latency_ms",
        "estimated_pass_rate",
        "estimated_quality",
        "finalizer",
        "independent_verification",
        "max_calls",
        "max_credits",
        "max_latency_ms",
        "policy",
        "reason_codes",
        "reviewer",
        "writer",
    }
)


class PlanParseError(LoomcError, ValueError):
    """A proposal that is not a well-formed plan; `reason` is a stable short code."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators, ASCII only, Python float repr (so `3.0` stays `3.0`).

    One shared encoder: `json.dumps` with these options builds a new one per call, a fifth of
    a `search` decision's cost."""
    return _CANONICAL.encode(value)


@dataclass(frozen=True)
class TaskProfile:
    family: str
    category: str
    summary: str
    risk: float
    complexity: float
    consequence: float
    ambiguity: float
    evidence_need: float
    reversibility: float
    input_tokens: int
    request_id: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskProfile:
        return cls(
            family=str(data["family"]),
            category=str(data["category"]),
            summary=str(data["summary"]),
            risk=data["risk"],
            complexity=data["complexity"],
            consequence=data["consequence"],
            ambiguity=data["ambiguity"],
            evidence_need=data["evidence_need"],
            reversibility=data["reversibility"],
            input_tokens=data["input_tokens"],
            request_id=data.get("request_id"),
        )

    def to_dict(self, *, include_request_id: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "family": self.family,
            "category": self.category,
            "summary": self.summary,
            "risk": self.risk,
            "complexity": self.complexity,
            "consequence": self.consequence,
            "ambiguity": self.ambiguity,
            "evidence_need": self.evidence_need,
            "reversibility": self.reversibility,
            "input_tokens": self.input_tokens,
        }
        if include_request_id and self.request_id is not None:
            out["request_id"] = self.request_id
        return out


@dataclass(frozen=True)
class WorkerProfile:
    id: str
    provider_group: str
    quality: float
    pass_rate: float
    credits_per_call: float
    p95_latency_ms: int
    strengths: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkerProfile:
        return cls(
            id=str(data["id"]),
            provider_group=str(data["provider_group"]),
            quality=data["quality"],
            pass_rate=data["pass_rate"],
            credits_per_call=data["credits_per_call"],
            p95_latency_ms=data["p95_latency_ms"],
            strengths=tuple(data.get("strengths", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "provider_group": self.provider_group,
            "quality": self.quality,
            "pass_rate": self.pass_rate,
            "credits_per_call": self.credits_per_call,
            "p95_latency_ms": self.p95_latency_ms,
            "strengths": list(self.strengths),
        }


@dataclass(frozen=True)
class Constraints:
    max_calls: int
    max_credits: float
    max_latency_ms: int
    minimum_quality: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Constraints:
        return cls(
            max_calls=data["max_calls"],
            max_credits=data["max_credits"],
            max_latency_ms=data["max_latency_ms"],
            minimum_quality=data["minimum_quality"],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_calls": self.max_calls,
            "max_credits": self.max_credits,
            "max_latency_ms": self.max_latency_ms,
            "minimum_quality": self.minimum_quality,
        }


def default_access(reviewer: str | None, finalizer: str | None) -> dict[str, tuple[str, ...]]:
    """The v2 access lists: each role sees exactly the roles before it."""
    return {
        "writer": (),
        "reviewer": ("writer",) if reviewer is not None else (),
        "finalizer": ("writer", "reviewer") if finalizer is not None else (),
    }


@dataclass(frozen=True)
class Plan:
    """One execution plan; the budgets are the hard limits, the `estimated_*` fields are declared."""

    policy: Policy
    writer: str
    reviewer: str | None
    finalizer: str | None
    max_calls: int
    max_credits: float
    max_latency_ms: int
    estimated_credits: float
    estimated_latency_ms: int
    estimated_quality: float
    estimated_pass_rate: float
    independent_verification: bool
    access: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reason_codes: tuple[str, ...] = ()

    @property
    def roles(self) -> tuple[str, ...]:
        """Worker ids in execution order (writer → reviewer → finalizer)."""
        return tuple(w for w in (self.writer, self.reviewer, self.finalizer) if w is not None)

    def to_dict(self) -> dict[str, Any]:
        access = self.access or default_access(self.reviewer, self.finalizer)
        return {
            "access": {role: list(access.get(role, ())) for role in ROLES},
            "estimated_credits": self.estimated_credits,
            "estimated_latency_ms": self.estimated_latency_ms,
            "estimated_pass_rate": self.estimated_pass_rate,
            "estimated_quality": self.estimated_quality,
            "finalizer": self.finalizer,
            "independent_verification": self.independent_verification,
            "max_calls": self.max_calls,
            "max_credits": self.max_credits,
            "max_latency_ms": self.max_latency_ms,
            "policy": self.policy,
            "reason_codes": list(self.reason_codes),
            "reviewer": self.reviewer,
            "writer": self.writer,
        }

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_json(
        cls, text: str | Mapping[str, Any], *, worker_ids: Sequence[str] | None = None
    ) -> Plan:
        """Parse a proposal strictly; with `worker_ids`, role ids must name those workers."""
        if isinstance(text, str):
            try:
                data: Any = json.loads(text)
            except ValueError as exc:
                raise PlanParseError("invalid_json", str(exc)) from None
        else:
            data = text
        if not isinstance(data, Mapping):
            raise PlanParseError("not_object", type(data).__name__)
        return _plan_from_mapping(data, worker_ids)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_types(data: Mapping[str, Any]) -> None:
    missing = sorted(LABEL_KEYS - set(data))
    if missing:
        raise PlanParseError("missing_key", ", ".join(missing))
    for key in ("max_credits", "estimated_credits", "estimated_quality", "estimated_pass_rate"):
        if not _is_number(data[key]):
            raise PlanParseError("wrong_type", f"{key} must be a number")
    for key in ("max_calls", "max_latency_ms", "estimated_latency_ms"):
        if not _is_int(data[key]):
            raise PlanParseError("wrong_type", f"{key} must be an integer")
    if not isinstance(data["independent_verification"], bool):
        raise PlanParseError("wrong_type", "independent_verification must be a boolean")
    access = data["access"]
    if not isinstance(access, Mapping) or set(access) != set(ROLES):
        raise PlanParseError("wrong_type", "access must have exactly writer, reviewer, finalizer")
    for role in ROLES:
        entry = access[role]
        if not isinstance(entry, list) or not all(isinstance(x, str) for x in entry):
            raise PlanParseError("wrong_type", f"access.{role} must be a list of strings")
    codes = data["reason_codes"]
    if not isinstance(codes, list) or not all(isinstance(x, str) for x in codes):
        raise PlanParseError("wrong_type", "reason_codes must be a list of strings")
    for key in ("estimated_quality", "estimated_pass_rate"):
        if not 0 <= data[key] <= 1:
            raise PlanParseError("out_of_range", f"{key} must lie in [0, 1]")


def _role(data: Mapping[str, Any], key: str, worker_ids: Sequence[str] | None) -> str | None:
    value = data[key]
    if value is None:
        return None
    if not isinstance(value, str):
        raise PlanParseError("wrong_type", f"{key} must be a worker id or null")
    if worker_ids is not None and value not in worker_ids:
        raise PlanParseError("unknown_worker", f"{key}={value!r}")
    return value


def _plan_from_mapping(data: Mapping[str, Any], worker_ids: Sequence[str] | None) -> Plan:
    _check_types(data)
    policy = data["policy"]
    if policy not in POLICIES:
        raise PlanParseError("invalid_policy", repr(policy))
    writer = _role(data, "writer", worker_ids)
    if writer is None:
        raise PlanParseError("wrong_type", "writer must be a worker id")
    reviewer = _role(data, "reviewer", worker_ids)
    finalizer = _role(data, "finalizer", worker_ids)
    shape = (reviewer is not None, finalizer is not None)
    expected = {"lean": (False, False), "balanced": (True, False), "strict": (True, True)}[policy]
    if shape != expected:
        raise PlanParseError("role_count", f"{policy} plan with roles {shape}")
    roles = [r for r in (writer, reviewer, finalizer) if r is not None]
    if len(set(roles)) != len(roles):
        raise PlanParseError("duplicate_role", ", ".join(roles))
    access = data["access"]
    return Plan(
        policy=cast(Policy, policy),
        writer=writer,
        reviewer=reviewer,
        finalizer=finalizer,
        max_calls=data["max_calls"],
        max_credits=data["max_credits"],
        max_latency_ms=data["max_latency_ms"],
        estimated_credits=data["estimated_credits"],
        estimated_latency_ms=data["estimated_latency_ms"],
        estimated_quality=data["estimated_quality"],
        estimated_pass_rate=data["estimated_pass_rate"],
        independent_verification=data["independent_verification"],
        access={role: tuple(access[role]) for role in ROLES},
        reason_codes=tuple(data["reason_codes"]),
    )


class Planner(Protocol):
    """Anything that proposes a plan; the checker, not the planner, decides whether it runs."""

    def plan(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> Plan: ...
