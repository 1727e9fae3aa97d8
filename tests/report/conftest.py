"""Fixed receipts for the golden and browser tests: every number, timestamp and version is set
here, so rendered reports are byte-stable."""

from __future__ import annotations

import pytest

from loomc.eval.receipt import EvalReceipt, EvalSettings, build_receipt
from loomc.eval.records import CheckResult, JudgeVerdict, RunRecord
from loomc.eval.spend import spend_totals
from loomc.exec.result import BudgetReport, RunResult, StepRecord, StepUsage

CREATED_AT = "2025-01-02T03:04:05+00:00"
LOOMC_VERSION = "0.0.0-golden"

# strategy -> (calls when low risk, calls when high risk, USD per call or None when unpriced)
PLAN = {
    "baseline": (1, 1, "0.0010"),
    "lean": (1, 1, "0.0010"),
    "balanced": (1, 2, "0.0010"),
    "strict": (3, 3, "0.0010"),
    "fixed": (4, 4, None),
}
CASES = [  # id, expected escalation, difficulty
    ("tz-convert", False, "low"),
    ("refund-race", True, "high"),
    ("plural-mouse", False, "low"),
    ("oauth-storage", True, "high"),
    ("sql-count", False, "medium"),
]


def _result(strategy: str, case_i: int, it: int, high: bool) -> RunResult:
    low_calls, high_calls, price = PLAN[strategy]
    calls = high_calls if high else low_calls
    model = "mock/unpriced-large" if price is None else "mock/worker-small"
    steps = [
        StepRecord(
            id=f"s{k}",
            role="drafter" if k == 0 else "critic",
            worker="w",
            model=model,
            status="ok",
            attempts=1,
            elapsed_ms=40 + 7 * k,
            usage=StepUsage(prompt_tokens=100, completion_tokens=50, total_tokens=150),
            cost=price,
        )
        for k in range(calls)
    ]
    return RunResult(
        answer="",
        pipeline="general",
        tier=None if strategy in ("baseline", "fixed") else strategy,
        calls=calls,
        escalated=calls > 1,
        escalation_reason="high-risk task" if calls > 1 else None,
        stop_reason="completed",
        budget=BudgetReport(limits={"calls": 4}, used={"calls": calls, "tokens": 150 * calls}),
        steps=steps,
        elapsed_ms=100 * calls + 13 * case_i + 5 * it,
        cost=None if price is None else str(calls * float(price)),
        missing_pricing=["mock/unpriced-large"] if price is None else [],
        tokens=150 * calls,
        receipt_hash=f"h{case_i}{it}{strategy}",
    )


def _records(judged: bool, iterations: int) -> list[RunRecord]:
    out: list[RunRecord] = []
    for si, strategy in enumerate(PLAN):
        for ci, (cid, high, difficulty) in enumerate(CASES):
            for it in range(iterations):
                res = _result(strategy, ci, it, high)
                has_checks = cid != "sql-count"
                check_ok = (ci + si + it) % 3 != 0
                checks = (
                    [CheckResult(type="contains", passed=check_ok, detail="contains 'x'")]
                    if has_checks
                    else []
                )
                rec = RunRecord(
                    case_id=cid,
                    strategy=strategy,
                    iteration=it,
                    difficulty=difficulty,
                    expected_escalation=high,
                    result=res,
                    checks=checks,
                    checks_passed=check_ok if has_checks else None,
                )
                if judged:
                    if (ci, si, it) == (1, 2, 0):
                        rec.judge = JudgeVerdict(
                            status="error",
                            model="mock/judge-large",
                            calls=1,
                            cost="0.0002",
                            usage={"total_tokens": 300},
                            error="unparseable judge reply: no JSON object",
                        )
                    else:
                        score = float(40 + (17 * ci + 11 * si + 5 * it) % 60)
                        rec.judge = JudgeVerdict(
                            status="ok",
                            score=score,
                            passed=score >= 70,
                            reason="fixture",
                            model="mock/judge-large",
                            calls=1,
                            cost="0.0002",
                            usage={"total_tokens": 300},
                        )
                out.append(rec)
    from loomc.eval.runner import grade

    return [grade(r) for r in out]


def make_receipt(judged: bool, iterations: int, answers: str | None = None) -> EvalReceipt:
    settings = EvalSettings(
        dataset="evals/mixed-routing.jsonl",
        dataset_sha256="0" * 64,
        strategies=list(PLAN),
        iterations=iterations,
        concurrency=4,
        judge_model="mock/judge-large" if judged else None,
        policy="default",
        answers=answers,
    )
    pricing = {"mock/worker-small": {"input_per_million": "1", "output_per_million": "2"}}
    records = _records(judged, iterations)
    receipt = build_receipt(
        records, settings, pricing, created_at=CREATED_AT, loomc_version=LOOMC_VERSION
    )
    receipt.totals = spend_totals(records, receipt.planners)  # as loomc.api.evaluating does
    return receipt


@pytest.fixture
def demo_receipt() -> EvalReceipt:
    """Demo-like: five strategies, a judge (one judge error), two iterations, one unpriced,
    scripted answers."""
    return make_receipt(judged=True, iterations=2, answers="scripted")


@pytest.fixture
def checks_only_receipt() -> EvalReceipt:
    """No judge, a single iteration, one unpriced strategy."""
    return make_receipt(judged=False, iterations=1)
