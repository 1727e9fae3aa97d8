"""The typed result of one run: what `loomc run --json` prints and what `loomc eval` records."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class StepUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated: bool = False


class StepRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    role: str
    worker: str
    model: str
    access: list[str] = Field(default_factory=list)
    status: str  # ok | failed | skipped | budget-stopped | cancelled
    reason: str | None = None  # why skipped / stopped / failed
    elapsed_ms: int = 0
    attempts: int = 0
    usage: StepUsage = Field(default_factory=StepUsage)
    cost: str | None = None  # USD as exact decimal string; None when the model has no pricing
    credits: str | None = None  # native spent credits when a receipt was returned
    reserved: dict[str, Any] = Field(default_factory=dict)  # ledger reservation for this step
    output: str | None = None


class BudgetReport(BaseModel):
    limits: dict[str, Any]
    used: dict[str, Any]
    reserved_peak: dict[str, Any] = Field(default_factory=dict)
    limited: bool = False


class RunResult(BaseModel):
    """One run of one pipeline x tier on one prompt."""

    model_config = ConfigDict(extra="forbid")

    answer: str
    pipeline: str
    tier: str | None
    calls: int
    escalated: bool
    escalation_reason: str | None
    stop_reason: str
    budget: BudgetReport
    steps: list[StepRecord]
    risk: dict[str, Any] = Field(default_factory=dict)
    elapsed_ms: int = 0
    cost: str | None = None  # total USD, None unless every invoked model is priced
    missing_pricing: list[str] = Field(default_factory=list)
    credits: str | None = None  # native credits, None when no receipt was seen
    estimated_credits: str = "0"
    tokens: int = 0
    error: str | None = None
    receipt_hash: str
    # The planner's verdict when a planner chose the plan; kept out of serialised results (the
    # eval journal, receipts) and added by callers that report it, like `loomc run --json`.
    conductor: dict[str, Any] | None = Field(default=None, exclude=True)
