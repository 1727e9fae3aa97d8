"""The versioned eval receipt: everything a report needs, re-renderable without paying again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from loomc.eval.metrics import PairedDelta, StrategyMetrics, compute
from loomc.eval.records import RunRecord

RECEIPT_VERSION = 1


class ReceiptError(Exception):
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


class EvalReceipt(BaseModel):
    version: int = RECEIPT_VERSION
    settings: EvalSettings = Field(default_factory=EvalSettings)
    models: list[str] = Field(default_factory=list)
    pricing: dict[str, Any] = Field(default_factory=dict)  # model -> price as in the policy
    runs: list[RunRecord] = Field(default_factory=list)
    metrics: list[StrategyMetrics] = Field(default_factory=list)
    deltas: list[PairedDelta] = Field(default_factory=list)
    judge_cost_usd: str | None = None


def sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_receipt(
    records: Sequence[RunRecord],
    settings: EvalSettings,
    pricing: dict[str, Any] | None = None,
) -> EvalReceipt:
    """Aggregate runs into a receipt; models are read from the steps that actually ran."""
    from decimal import Decimal

    models = sorted({s.model for r in records if r.result for s in r.result.steps})
    verdicts = [r.judge for r in records if r.judge is not None]
    judge_cost = None
    if verdicts and all(v.cost is not None for v in verdicts):
        judge_cost = str(sum((Decimal(v.cost or "0") for v in verdicts), Decimal(0)))
    metrics, deltas = compute(records)
    return EvalReceipt(
        settings=settings,
        models=models,
        pricing=dict(pricing or {}),
        runs=list(records),
        metrics=metrics,
        deltas=deltas,
        judge_cost_usd=judge_cost,
    )


def load_receipt(path: str | Path) -> EvalReceipt:
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
