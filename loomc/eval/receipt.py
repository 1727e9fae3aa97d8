"""The versioned eval receipt: everything a report needs, re-renderable without paying again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from loomc.errors import LoomcError
from loomc.eval.metrics import PairedDelta, StrategyMetrics, compute
from loomc.eval.records import RunRecord

RECEIPT_VERSION = 2  # 2: judge verdicts and summary, quality_source, over/under-escalation


class ReceiptError(LoomcError):
    """A receipt file that cannot be loaded; the message is one line for the user."""


class EvalSettings(BaseModel):
    dataset: str | None = None
    dataset_sha256: str | None = None
    strategies: list[str] = Field(default_factory=list)
    iterations: int = 1
    concurrency: int = 1
    judge_model: str | None = None
    policy: str | None = None
    include_answers: bool = False
    # Where the answers came from, per the policy's providers: "model" (real providers), "mock"
    # (the mock's prompt-aware defaults), "scripted" (mock rules wrote them: a demo, not a
    # measurement of any model), or "<kind>+model" when mock and real providers mix.
    answers: str | None = None


class JudgeSummary(BaseModel):
    """The judge's own spend, reported apart from (and never inside) workflow metrics."""

    model: str | None = None
    runs: int = 0  # runs with a verdict
    judged: int = 0
    errors: int = 0
    pending: int = 0  # left unjudged by the eval-wide budget
    calls: int = 0
    tokens: int = 0
    cost_usd: str | None = None  # None unless every judge call is priced
    credits: str | None = None  # native credits; None when no receipt was seen
    missing_pricing: list[str] = Field(default_factory=list)


class EvalReceipt(BaseModel):
    version: int = RECEIPT_VERSION
    loomc_version: str | None = None  # the loomc that ran the eval
    created_at: str | None = None  # ISO 8601 UTC, when the eval finished
    settings: EvalSettings = Field(default_factory=EvalSettings)
    models: list[str] = Field(default_factory=list)
    pricing: dict[str, Any] = Field(default_factory=dict)  # model -> price as in the policy
    runs: list[RunRecord] = Field(default_factory=list)
    metrics: list[StrategyMetrics] = Field(default_factory=list)
    deltas: list[PairedDelta] = Field(default_factory=list)
    judge_cost_usd: str | None = None
    judge: JudgeSummary | None = None
    # conductor:PLANNER strategies: how each planner decided (loomc.eval.strategies)
    planners: dict[str, Any] = Field(default_factory=dict, exclude_if=lambda v: not v)


def judge_summary(records: Sequence[RunRecord]) -> JudgeSummary | None:
    from decimal import Decimal

    verdicts = [r.judge for r in records if r.judge is not None]
    if not verdicts:
        return None
    paid = [v for v in verdicts if v.calls]
    models = sorted({v.model for v in verdicts if v.model})
    unpriced = sorted({v.model or "?" for v in paid if v.cost is None})
    credits = [v.credits for v in paid if v.credits is not None]
    return JudgeSummary(
        model=", ".join(models) or None,
        runs=len(verdicts),
        judged=sum(v.status == "ok" for v in verdicts),
        errors=sum(v.status == "error" for v in verdicts),
        pending=sum(v.status == "budget-stopped" for v in verdicts),
        calls=sum(v.calls for v in verdicts),
        tokens=sum(int(v.usage.get("total_tokens", 0)) for v in verdicts),
        cost_usd=None
        if unpriced
        else str(sum((v.cost for v in paid if v.cost is not None), Decimal(0))),
        credits=str(sum(credits, Decimal(0))) if credits else None,
        missing_pricing=unpriced,
    )


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks (datasets, corpora, model shards)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def build_receipt(
    records: Sequence[RunRecord],
    settings: EvalSettings,
    pricing: dict[str, Any] | None = None,
    *,
    created_at: str | None = None,
    loomc_version: str | None = None,
) -> EvalReceipt:
    """Aggregate runs into a receipt; models are read from the steps that actually ran."""
    models = sorted({s.model for r in records if r.result for s in r.result.steps})
    summary = judge_summary(records)
    metrics, deltas = compute(records)
    return EvalReceipt(
        loomc_version=loomc_version,
        created_at=created_at,
        settings=settings,
        models=models,
        pricing=dict(pricing or {}),
        runs=list(records),
        metrics=metrics,
        deltas=deltas,
        judge_cost_usd=None if summary is None else summary.cost_usd,
        judge=summary,
    )


def load_receipt(path: str | Path) -> EvalReceipt:
    """Read a saved eval receipt (``loomc report`` re-renders it); raises ``ReceiptError`` with
    file:line:col on unreadable, invalid or newer-than-supported receipts."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReceiptError(f"{p}: cannot read receipt: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ReceiptError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("version"), int):
        raise ReceiptError(f"{p}: not an eval receipt (no integer 'version')")
    if data["version"] > RECEIPT_VERSION:
        raise ReceiptError(
            f"{p}: receipt version {data['version']} is newer than this loomc supports "
            f"({RECEIPT_VERSION}); upgrade loomc"
        )
    try:
        return EvalReceipt.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise ReceiptError(f"{p}: invalid receipt at {loc}: {first['msg']}") from None
