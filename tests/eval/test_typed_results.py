"""Typed run results read what earlier versions wrote: a journal written before statuses, stop
reasons, money and budgets were typed loads into enums, decimals and Budget/Usage, and is
written back byte for byte (so a resumed eval and its receipt do not change)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from loomc.eval.records import RunRecord
from loomc.eval.runner import Journal
from loomc.exec.events import EventKind
from loomc.exec.result import BudgetReport, RunResult, StepStatus, StopReason
from loomc.units import Budget, Dimension, Usage

OLD = Path(__file__).parent / "data" / "journal-v2-before-typed-results.jsonl"


def test_an_old_journal_loads_typed_and_rewrites_byte_for_byte() -> None:
    lines = OLD.read_text(encoding="utf-8").splitlines()
    records = [RunRecord.model_validate_json(line) for line in lines]
    assert [r.model_dump_json() for r in records] == lines

    stopped, direct = (r.result for r in records)
    assert stopped is not None and direct is not None
    assert stopped.stop_reason is StopReason.MAX_CALLS and stopped.budget.limited
    assert [s.status for s in stopped.steps] == [
        StepStatus.OK,
        StepStatus.OK,
        StepStatus.BUDGET_STOPPED,
    ]
    assert isinstance(stopped.budget.limits, Budget) and stopped.budget.limits.calls == 3
    assert isinstance(stopped.budget.used, Usage) and stopped.budget.used.calls == 2
    assert stopped.cost == sum((s.cost for s in stopped.steps if s.cost is not None), Decimal(0))
    assert stopped.credits == Decimal("0.25")  # the critic's native receipt
    assert stopped.steps[0].reserved is not None and stopped.steps[0].reserved.credits > 0
    assert stopped.estimated_credits == Decimal("2.5")

    assert direct.stop_reason is StopReason.DIRECT_ANSWER_ACCEPTED and not direct.budget.limited
    skipped = direct.steps[-1]
    assert skipped.status is StepStatus.SKIPPED and skipped.reserved is None  # {} in JSON


def test_the_journal_reads_old_lines(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(OLD.read_text(encoding="utf-8"), encoding="utf-8")
    done = Journal(path).load()
    assert len(done) == 2
    for record in done.values():
        Journal(tmp_path / "again.jsonl").append(record)
    assert (tmp_path / "again.jsonl").read_text() == OLD.read_text()


def test_partial_budgets_keep_their_axes() -> None:
    text = (
        '{"limits":{"calls":4},"used":{"calls":1,"tokens":150},"reserved_peak":{},"limited":false}'
    )
    report = BudgetReport.model_validate_json(text)
    assert report.limits == Budget(calls=4) and report.used == Usage(calls=1, tokens=150)
    assert report.reserved_peak is None
    assert report.model_dump_json() == text
    assert BudgetReport.model_validate_json(report.model_dump_json()) == report


def test_stop_reasons_say_what_limited_the_run() -> None:
    limited = {r for r in StopReason if r.limited}
    assert {str(r) for r in limited} == {
        "input-too-large",
        "max-calls-reached",
        "max-tokens-reached",
        "max-credits-reached",
        "max-cost-reached",
        "max-latency-reached",
        "over-ceiling",
    }
    assert StopReason.OVER_CEILING.dimension is None
    assert StopReason.MAX_CREDITS.dimension is Dimension.CREDITS
    assert StopReason.INPUT_TOO_LARGE.dimension is None
    assert all(StopReason.ceiling(d).dimension is d for d in Dimension)
    assert {str(r) for r in StopReason} - {str(r) for r in limited} == {
        "completed",
        "direct-answer-accepted",
        "error",
        "guard-undecided",  # a guard's pattern ran past its time bound: not a budget's limit
    }


def test_enum_values_are_the_wire_words() -> None:
    assert [str(k) for k in EventKind] == [
        "run-started",
        "step-started",
        "token",
        "provider-frame",
        "step-finished",
        "step-skipped",
        "step-retry",
        "budget-stop",
        "run-finished",
        "reasoning",
        "warning",
    ]
    assert [str(s) for s in StepStatus] == [
        "running",
        "ok",
        "failed",
        "skipped",
        "budget-stopped",
        "cancelled",
    ]


def test_money_is_written_as_the_exact_decimal_string() -> None:
    result = RunResult(
        answer="",
        pipeline="p",
        tier=None,
        calls=0,
        escalated=False,
        escalation_reason=None,
        stop_reason=StopReason.COMPLETED,
        receipt_hash="h",
        steps=[],
        budget=BudgetReport(limits=Budget(cost=Decimal("0.50")), used=Usage()),
        cost=Decimal("0.0010"),
        credits=None,
        estimated_credits=Decimal("1.50"),
    )
    doc = result.model_dump(mode="json")
    assert (doc["cost"], doc["credits"], doc["estimated_credits"]) == ("0.0010", None, "1.50")
    assert doc["budget"]["limits"]["cost"] == "0.50" and doc["budget"]["reserved_peak"] == {}
    assert doc["stop_reason"] == "completed"
    assert RunResult.model_validate(doc) == result
