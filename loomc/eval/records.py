"""One finished cell of the eval matrix (case x strategy x iteration): the unit the journal
stores, the metrics aggregate and the reports render. Runs are kept whole so that a report can
be re-rendered, and a resumed eval re-uses them, without paying again."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loomc.exec.result import Money, RunResult


class CheckResult(BaseModel):
    type: str
    passed: bool
    detail: str = ""


class JudgeVerdict(BaseModel):
    """The blinded judge's verdict on one run; its usage and cost never enter workflow metrics."""

    status: str = "ok"  # ok | error | budget-stopped (resumable) | skipped (no answer to judge)
    score: float | None = None  # 0-100; None when the verdict could not be parsed
    passed: bool | None = None
    reason: str = ""
    model: str | None = None
    calls: int = 0
    usage: dict[str, Any] = Field(default_factory=dict)  # prompt/completion/total tokens
    cost: Money | None = None  # USD, kept apart from workflow cost; None when the judge is unpriced
    credits: Money | None = None  # native credits from receipts; None when none was seen
    elapsed_ms: int = 0
    error: str | None = None
    reply: str | None = None  # the start of an unparseable reply, for debugging the judge


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
    quality_source: str | None = None  # judge | checks; None when quality is missing
    answer: str | None = None  # kept only with --include-answers
    # conductor:PLANNER strategies: the planner's guarded decision (task profile and the cues
    # behind it, proposal, verdict, fallback, the plan that ran)
    # (left out of the JSON when absent, so records without a planner stay byte-identical)
    conductor: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None)
