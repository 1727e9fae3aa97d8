"""One finished cell of the eval matrix (case x strategy x iteration): the unit the journal
stores, the metrics aggregate and the reports render. Runs are kept whole so that a report can
be re-rendered, and a resumed eval re-uses them, without paying again."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loomc.exec.result import RunResult


class CheckResult(BaseModel):
    type: str
    passed: bool
    detail: str = ""


class JudgeVerdict(BaseModel):
    score: float | None = None  # 0-100; None when the verdict could not be parsed
    passed: bool | None = None
    reason: str = ""
    model: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    cost: str | None = None  # USD, kept apart from workflow cost
    error: str | None = None


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case_id: str
    strategy: str  # e.g. "baseline", "balanced", "balanced@semantic", "code_review@strict"
    iteration: int
    difficulty: str | None = None
    expected_escalation: bool | None = None
    result: RunResult | None = None  # None when the run errored before producing a result
    status: str = "ok"  # ok | error | budget-stopped (eval-wide budget refused the run)
    error: str | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    checks_passed: bool | None = None  # None when the case has no checks
    judge: JudgeVerdict | None = None
    passed: bool | None = None  # checks and judge (when present) both pass
    quality: float | None = None  # 0-100: judge score, else check pass fraction x 100
    answer: str | None = None  # kept only with --include-answers
