"""The versioned eval receipt: everything a report needs, re-renderable without paying again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, GetCoreSchemaHandler, ValidationError
from pydantic_core import CoreSchema, core_schema

from loomc.errors import LoomcError
from loomc.eval.metrics import PairedDelta, StrategyMetrics
from loomc.eval.records import RunRecord
from loomc.eval.runlog import RunLog
from loomc.eval.tally import JudgeTally, Tally

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


class _RunsSchema:
    """``EvalReceipt.runs``: a list, or a ``RunLog`` kept as it is (an eval's runs stay on disk
    until rendered); either serializes as the JSON list of the runs."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        items = core_schema.list_schema(handler.generate_schema(RunRecord))
        return core_schema.json_or_python_schema(
            json_schema=items,
            python_schema=core_schema.union_schema([core_schema.is_instance_schema(RunLog), items]),
            serialization=core_schema.plain_serializer_function_ser_schema(
                list, return_schema=items
            ),
        )


Runs = Annotated[Sequence[RunRecord], _RunsSchema()]


class EvalReceipt(BaseModel):
    version: int = RECEIPT_VERSION
    loomc_version: str | None = None  # the loomc that ran the eval
    created_at: str | None = None  # ISO 8601 UTC, when the eval finished
    settings: EvalSettings = Field(default_factory=EvalSettings)
    models: list[str] = Field(default_factory=list)
    pricing: dict[str, Any] = Field(default_factory=dict)  # model -> price as in the policy
    runs: Runs = Field(default_factory=list)
    metrics: list[StrategyMetrics] = Field(default_factory=list)
    deltas: list[PairedDelta] = Field(default_factory=list)
    judge_cost_usd: str | None = None
    judge: JudgeSummary | None = None
    # conductor:PLANNER strategies: how each planner decided (loomc.eval.strategies)
    planners: dict[str, Any] = Field(default_factory=dict, exclude_if=lambda v: not v)
    # what the eval spent against its totals: workflow, judge and planner calls (loomc.eval.spend)
    totals: dict[str, Any] = Field(default_factory=dict, exclude_if=lambda v: not v)


def judge_summary(records: Sequence[RunRecord]) -> JudgeSummary | None:
    judged = JudgeTally()
    for r in records:
        if r.judge is not None:
            judged.add(r.judge)
    return _summary(judged)


def _summary(j: JudgeTally) -> JudgeSummary | None:
    if not j.runs:
        return None
    unpriced = sorted(j.unpriced)
    return JudgeSummary(
        model=", ".join(sorted(j.models)) or None,
        runs=j.runs,
        judged=j.judged,
        errors=j.errors,
        pending=j.pending,
        calls=j.calls,
        tokens=j.tokens,
        cost_usd=None if unpriced else str(j.cost),
        credits=None if j.credits is None else str(j.credits),
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
    """Aggregate runs into a receipt; models are read from the steps that actually ran. A
    ``RunLog`` (what an eval returns) is aggregated already and stays on disk."""
    if isinstance(records, RunLog):
        runs: Sequence[RunRecord] = records
        tally = records.tally
    else:
        runs, tally = list(records), Tally()
        for r in runs:
            tally.add(r)
    summary = _summary(tally.judge)
    metrics, deltas = tally.metrics()
    return EvalReceipt(
        loomc_version=loomc_version,
        created_at=created_at,
        settings=settings,
        models=sorted(tally.models),
        pricing=dict(pricing or {}),
        runs=runs,
        metrics=metrics,
        deltas=deltas,
        judge_cost_usd=None if summary is None else summary.cost_usd,
        judge=summary,
    )


def receipt_json(receipt: EvalReceipt) -> Iterator[str]:
    """``receipt.model_dump_json(indent=2)``, in pieces: the runs one at a time, so writing the
    receipt of 100,000 runs never holds them (or their text) all at once."""
    if not receipt.runs:
        yield receipt.model_dump_json(indent=2)
        return
    head, tail = (
        receipt.model_copy(update={"runs": []}).model_dump_json(indent=2).split(_EMPTY_RUNS, 1)
    )
    yield head + '\n  "runs": [\n'
    for n, run in enumerate(receipt.runs):
        text = run.model_dump_json(indent=2).replace("\n", "\n    ")
        yield ("    " if n == 0 else ",\n    ") + text
    yield "\n  ]," + tail


_EMPTY_RUNS = '\n  "runs": [],'  # a newline never occurs inside a JSON string


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
