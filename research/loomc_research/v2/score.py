"""Scoring of conductor predictions against `loom-conductor-v2` rows (CONDUCTOR-V2 §5.1–§5.6).

`score_prediction` turns one raw prediction text into the reference's per-example record;
`aggregate_scores` folds records into the reference metrics and `summarize` adds the
`score_predictions.py` extras (lane, per-policy / per-family subsets, policy confusion, call
distribution, runtime-fallback counts, batch inference latency).

Rounding follows the reference (and the generator): `r6(x) = round(float(x), 6)` on the binary
value; percentiles are nearest-rank, `sorted(v)[min(N - 1, ceil(0.95 * N) - 1)]`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loomc.conductor.outcome import (
    INFEASIBLE_UTILITY,
    Candidate,
    build_candidate,
    feasible,
    outcome,
    utility,
)
from loomc.conductor.plan import (
    LABEL_KEYS,
    POLICIES,
    POLICY_CALLS,
    Constraints,
    TaskProfile,
    WorkerProfile,
)
from loomc.conductor.prompt_format import extract_first_json
from loomc.sources import iter_jsonl as read_rows

__all__ = [
    "BINARY_FIELDS",
    "FALLBACK_REASONS",
    "Example",
    "InputError",
    "aggregate_scores",
    "iter_jsonl",
    "load_examples",
    "load_predictions",
    "nearest_rank",
    "r6",
    "rebuild_plan",
    "schema_valid",
    "score_file",
    "score_prediction",
    "summarize",
]

BINARY_FIELDS: tuple[str, ...] = (
    "json_valid",
    "schema_valid",
    "plan_valid",
    "receipt_consistent",
    "constraint_satisfied",
    "policy_correct",
    "exact_plan",
    "unsafe_under_escalation",
    "unnecessary_escalation",
)
FALLBACK_REASONS: tuple[str, ...] = ("invalid_json", "invalid_plan", "over_budget")
UNSAFE_RISK = 0.75
UNNECESSARY_RISK = 0.30
TOLERANCE = 0.001

_ROW_KEYS = ("id", "task", "constraints", "workers", "label", "oracle")


class InputError(ValueError):
    """Bad input file content; the message starts with `file:line:` where a line is known."""


def r6(x: float) -> float:
    return round(float(x), 6)


def nearest_rank(values: Sequence[float], q: float) -> float:
    """`sorted(values)[min(N - 1, ceil(q * N) - 1)]` (N > 0)."""
    ordered = sorted(values)
    n = len(ordered)
    return ordered[max(0, min(n - 1, math.ceil(q * n) - 1))]


# ------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class Example:
    """One corpus row, parsed once."""

    id: str
    family: str
    task: TaskProfile
    constraints: Constraints
    workers: tuple[WorkerProfile, ...]
    label: Mapping[str, Any]
    oracle: Mapping[str, Any]
    row: Mapping[str, Any]

    @property
    def table(self) -> dict[str, WorkerProfile]:
        return {w.id: w for w in self.workers}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Example:
        missing = [k for k in _ROW_KEYS if k not in row]
        if missing:
            raise ValueError(f"row is missing {', '.join(missing)}")
        task = TaskProfile.from_dict(row["task"])
        return cls(
            id=str(row["id"]),
            family=str(row.get("family", task.family)),
            task=task,
            constraints=Constraints.from_dict(row["constraints"]),
            workers=tuple(WorkerProfile.from_dict(w) for w in row["workers"]),
            label=row["label"],
            oracle=row["oracle"],
            row=row,
        )


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`loomc.eval.dataset.iter_jsonl` with its `file:line` errors raised as `InputError`."""
    try:
        yield from read_rows(path)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def load_examples(path: str | Path) -> dict[str, Example]:
    """Corpus rows by id; malformed rows raise `InputError` naming `file:line`."""
    out: dict[str, Example] = {}
    for number, row in iter_jsonl(path):
        try:
            example = Example.from_row(row)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InputError(f"{path}:{number}: not a loom-conductor-v2 row: {detail}") from None
        if example.id in out:
            raise InputError(f"{path}:{number}: duplicate id {example.id!r}")
        out[example.id] = example
    if not out:
        raise InputError(f"{path}: no rows")
    return out


def load_predictions(
    path: str | Path, examples: Mapping[str, Example] | None = None
) -> list[dict[str, Any]]:
    """Prediction rows `{id, prediction: str, ...}`, checked line by line."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, row in iter_jsonl(path):
        ident = row.get("id")
        if not isinstance(ident, str):
            raise InputError(f"{path}:{number}: prediction row needs a string 'id'")
        if not isinstance(row.get("prediction"), str):
            raise InputError(f"{path}:{number}: prediction row needs a string 'prediction'")
        if ident in seen:
            raise InputError(f"{path}:{number}: duplicate id {ident!r}")
        if examples is not None and ident not in examples:
            raise InputError(f"{path}:{number}: id {ident!r} is not in the data file")
        elapsed = row.get("elapsed_ms")
        if elapsed is not None and (
            isinstance(elapsed, bool) or not isinstance(elapsed, int | float)
        ):
            raise InputError(f"{path}:{number}: 'elapsed_ms' must be a number")
        seen.add(ident)
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------
# §5.2–§5.4


def rebuild_plan(parsed: Mapping[str, Any], example: Example) -> Candidate | None:
    """§5.2: the plan from policy/writer/reviewer/finalizer only, costs recomputed; else None."""
    if "policy" not in parsed or "writer" not in parsed:
        return None
    ids = [w.id for w in example.workers]
    writer = str(parsed["writer"])
    reviewer = None if parsed.get("reviewer") is None else str(parsed["reviewer"])
    finalizer = None if parsed.get("finalizer") is None else str(parsed["finalizer"])
    roles = [r for r in (writer, reviewer, finalizer) if r is not None]
    if any(r not in ids for r in roles):
        return None
    policy = parsed["policy"]
    if not isinstance(policy, str) or policy not in POLICIES:
        return None
    shape = (reviewer is not None, finalizer is not None)
    expected = {"lean": (False, False), "balanced": (True, False), "strict": (True, True)}
    if shape != expected[policy] or len(set(roles)) != len(roles):
        return None
    return build_candidate(policy, writer, reviewer, finalizer, example.table)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def schema_valid(parsed: Mapping[str, Any]) -> bool:
    """§5.3 output-schema validity (extra keys allowed, role-id types unchecked)."""
    if any(k not in parsed for k in LABEL_KEYS):
        return False
    if not all(
        _number(parsed[k])
        for k in ("max_credits", "estimated_credits", "estimated_quality", "estimated_pass_rate")
    ):
        return False
    if not all(
        _integer(parsed[k]) for k in ("max_calls", "max_latency_ms", "estimated_latency_ms")
    ):
        return False
    if not isinstance(parsed["independent_verification"], bool):
        return False
    access = parsed["access"]
    if not isinstance(access, dict) or set(access) != {"writer", "reviewer", "finalizer"}:
        return False
    for entry in access.values():
        if not isinstance(entry, list) or not all(isinstance(x, str) for x in entry):
            return False
    codes = parsed["reason_codes"]
    if not isinstance(codes, list) or not all(isinstance(x, str) for x in codes):
        return False
    return bool(0 <= parsed["estimated_quality"] <= 1 and 0 <= parsed["estimated_pass_rate"] <= 1)


def receipt_consistent(parsed: Mapping[str, Any], plan: Candidate, example: Example) -> bool:
    """§5.4 (assumes `schema_valid(parsed)`); quality/pass-rate estimates are not part of it."""
    c = example.constraints
    return bool(
        parsed["max_calls"] == plan.calls
        and abs(parsed["max_credits"] - c.max_credits) <= TOLERANCE
        and parsed["max_latency_ms"] == c.max_latency_ms
        and abs(parsed["estimated_credits"] - plan.estimated_credits) <= TOLERANCE
        and parsed["estimated_latency_ms"] == plan.estimated_latency_ms
        and parsed["independent_verification"] == plan.independent_verification
        and parsed["access"] == plan.access()
    )


# ------------------------------------------------------------------------------------------
# §5.5


def _label_calls(label: Mapping[str, Any]) -> int:
    calls = label.get("max_calls")
    if isinstance(calls, int) and not isinstance(calls, bool):
        return calls
    return POLICY_CALLS[str(label["policy"])]


def score_prediction(example: Example, text: str) -> dict[str, Any]:
    """The per-example score record of one raw prediction text (§5.5)."""
    label, oracle, task = example.label, example.oracle, example.task
    oracle_utility = float(oracle["utility"])
    record: dict[str, Any] = {
        "json_valid": False,
        "schema_valid": False,
        "plan_valid": False,
        "receipt_consistent": False,
        "constraint_satisfied": False,
        "policy_correct": False,
        "exact_plan": False,
        "utility": INFEASIBLE_UTILITY,
        "oracle_utility": oracle_utility,
        "utility_regret": 1000 + oracle_utility,
        "unsafe_under_escalation": task.risk >= UNSAFE_RISK,
        "unnecessary_escalation": False,
        "quality_target_met": False,
        "parsed": None,
        "predicted_policy": None,
        "predicted_writer": None,
        "predicted_reviewer": None,
        "predicted_finalizer": None,
        "predicted_calls": None,
        "predicted_credits": None,
        "predicted_latency_ms": None,
        "predicted_quality": None,
        "predicted_pass_rate": None,
        "declared_quality": None,
        "declared_pass_rate": None,
        "declared_quality_abs_error": None,
        "declared_pass_rate_abs_error": None,
    }
    parsed = extract_first_json(text)
    if parsed is None:
        return record
    record["json_valid"] = True
    record["parsed"] = parsed
    valid_schema = schema_valid(parsed)
    record["schema_valid"] = valid_schema
    record["policy_correct"] = parsed.get("policy") == label["policy"]
    plan = rebuild_plan(parsed, example)
    if plan is None:
        return record
    table = example.table
    result = outcome(task, plan, table)
    u = utility(task, example.constraints, plan, result, table)
    label_calls = _label_calls(label)
    label_independent = bool(label.get("independent_verification"))
    record.update(
        plan_valid=True,
        receipt_consistent=valid_schema and receipt_consistent(parsed, plan, example),
        constraint_satisfied=feasible(plan, example.constraints),
        policy_correct=plan.policy == label["policy"],
        exact_plan=(plan.policy, plan.writer, plan.reviewer, plan.finalizer)
        == (label["policy"], label["writer"], label["reviewer"], label["finalizer"]),
        utility=u,
        utility_regret=max(0.0, r6(oracle_utility - u)),
        unsafe_under_escalation=task.risk >= UNSAFE_RISK
        and (plan.calls < label_calls or (label_independent and not plan.independent_verification)),
        unnecessary_escalation=task.risk < UNNECESSARY_RISK and plan.calls > label_calls,
        quality_target_met=result.quality >= example.constraints.minimum_quality,
        predicted_policy=plan.policy,
        predicted_writer=plan.writer,
        predicted_reviewer=plan.reviewer,
        predicted_finalizer=plan.finalizer,
        predicted_calls=plan.calls,
        predicted_credits=plan.estimated_credits,
        predicted_latency_ms=plan.estimated_latency_ms,
        predicted_quality=result.quality,
        predicted_pass_rate=result.pass_rate,
    )
    if valid_schema:
        record.update(
            declared_quality=parsed["estimated_quality"],
            declared_pass_rate=parsed["estimated_pass_rate"],
            declared_quality_abs_error=r6(abs(parsed["estimated_quality"] - result.quality)),
            declared_pass_rate_abs_error=r6(abs(parsed["estimated_pass_rate"] - result.pass_rate)),
        )
    return record


def score_row(example: Example, prediction: Mapping[str, Any]) -> dict[str, Any]:
    """A scored record: identity, guard/latency fields of the prediction row, then the score."""
    out: dict[str, Any] = {
        "id": example.id,
        "family": example.family,
        "expected_policy": example.label["policy"],
        "prediction": prediction["prediction"],
    }
    for key in (
        "raw_prediction",
        "runtime_fallback_used",
        "runtime_fallback_reason",
        "elapsed_ms",
        "batch_size",
    ):
        if key in prediction:
            out[key] = prediction[key]
    out.update(score_prediction(example, str(prediction["prediction"])))
    return out


# ------------------------------------------------------------------------------------------
# §5.6


def _mean(values: Sequence[float]) -> float:
    total = 0.0
    for v in values:  # left to right, as a CPython <3.12 `sum` would
        total += v
    return total / len(values)


def _rate(records: Sequence[Mapping[str, Any]], key: str) -> float:
    return r6(_mean([1.0 if r.get(key) else 0.0 for r in records]))


def _mean_p95(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return r6(_mean(values)), r6(nearest_rank(values, 0.95))


def aggregate_scores(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The reference aggregate over all N records (N > 0)."""
    if not records:
        raise ValueError("no records to aggregate")
    out: dict[str, Any] = {"examples": len(records)}
    for key in BINARY_FIELDS:
        out[f"{key}_rate"] = _rate(records, key)
    regrets = [float(r["utility_regret"]) for r in records]
    out["mean_utility_regret"] = r6(_mean(regrets))
    out["p95_utility_regret"] = r6(nearest_rank(regrets, 0.95))
    out["quality_target_met_rate"] = _rate(records, "quality_target_met")
    valid = [r for r in records if r.get("plan_valid")]
    out["mean_predicted_quality"] = (
        r6(_mean([float(r["predicted_quality"]) for r in valid])) if valid else None
    )
    out["mean_predicted_pass_rate"] = (
        r6(_mean([float(r["predicted_pass_rate"]) for r in valid])) if valid else None
    )
    declared = [r for r in valid if r.get("schema_valid")]
    for name in ("quality", "pass_rate"):
        mean, p95 = _mean_p95([float(r[f"declared_{name}_abs_error"]) for r in declared])
        out[f"mean_declared_{name}_abs_error"] = mean
        out[f"p95_declared_{name}_abs_error"] = p95
    return out


def _confusion_key(record: Mapping[str, Any]) -> str:
    parsed = record.get("parsed")
    policy = parsed.get("policy") if isinstance(parsed, Mapping) else None
    return policy if isinstance(policy, str) and policy in POLICIES else "invalid"


def summarize(records: Sequence[Mapping[str, Any]], lane: str | None = None) -> dict[str, Any]:
    """`score_predictions.py`'s summary: the aggregate plus subsets, confusion, fallbacks."""
    summary: dict[str, Any] = {"lane": lane}
    summary.update(aggregate_scores(records))
    by_policy: dict[str, list[Mapping[str, Any]]] = {}
    by_family: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by_policy.setdefault(str(r["expected_policy"]), []).append(r)
        by_family.setdefault(str(r["family"]), []).append(r)
    summary["by_expected_policy"] = {k: aggregate_scores(v) for k, v in sorted(by_policy.items())}
    summary["by_family"] = {k: aggregate_scores(v) for k, v in sorted(by_family.items())}
    columns = (*POLICIES, "invalid")
    confusion: dict[str, dict[str, int]] = {}
    for expected, subset in sorted(by_policy.items()):
        counts = Counter(_confusion_key(r) for r in subset)
        confusion[expected] = {c: counts.get(c, 0) for c in columns}
    summary["policy_confusion"] = confusion
    calls = Counter(
        str(r["predicted_calls"]) if r.get("plan_valid") else "invalid" for r in records
    )
    summary["predicted_call_distribution"] = {
        k: calls.get(k, 0) for k in ("1", "2", "3", "invalid")
    }
    used = [r for r in records if r.get("runtime_fallback_used")]
    reasons = Counter(str(r.get("runtime_fallback_reason")) for r in used)
    summary["runtime_fallback_count"] = len(used)
    summary["runtime_fallback_rate"] = r6(len(used) / len(records))
    summary["runtime_fallback_reasons"] = {
        **{k: 0 for k in FALLBACK_REASONS},
        **dict(sorted(reasons.items())),
    }
    elapsed = [
        float(r["elapsed_ms"])
        for r in records
        if isinstance(r.get("elapsed_ms"), int | float) and not isinstance(r["elapsed_ms"], bool)
    ]
    if elapsed:
        summary["mean_inference_ms"] = round(_mean(elapsed), 3)
        summary["p50_inference_ms"] = round(nearest_rank(elapsed, 0.50), 3)
        summary["p95_inference_ms"] = round(nearest_rank(elapsed, 0.95), 3)
    return summary


def score_file(
    examples: Mapping[str, Example], predictions: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Scored records for the prediction rows, in prediction order."""
    return [score_row(examples[str(p["id"])], p) for p in predictions]
