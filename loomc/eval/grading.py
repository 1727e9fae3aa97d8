"""Scoring one finished run (checks, the judge's verdict, passed and quality) and the two views
of it that leave the process: what the journal keeps and what the receipt keeps."""

from __future__ import annotations

from loomc.eval.checks import run_checks
from loomc.eval.judge import JudgeSpec, Verdict
from loomc.eval.plan import Job
from loomc.eval.records import JudgeVerdict, RunRecord


def with_checks(job: Job, record: RunRecord) -> RunRecord:
    """Run the case's deterministic checks on the answer (not on a run the budget stopped)."""
    if record.result is None or record.status != "ok" or not job.case.checks:
        return record
    checks = run_checks(list(job.case.checks), record.result.answer)
    return record.model_copy(
        update={"checks": checks, "checks_passed": all(c.passed for c in checks)}
    )


def grade(record: RunRecord) -> RunRecord:
    """A copy of ``record`` with passed and quality set (``grading``)."""
    return record.model_copy(update=grading(record))


def grading(record: RunRecord) -> dict[str, object]:
    """passed and quality from the checks and, when present, the judge's verdict.

    With a judge a run passes only if the judge and the checks both pass, and quality is the
    judge's score; a judge error leaves quality missing (never 0) and the run not passed."""
    checks, verdict = record.checks, record.judge
    passed: bool | None
    quality: float | None
    source: str | None = None
    if record.status != "ok" or record.result is None:
        passed, quality = None, None
    elif verdict is None:
        passed = record.checks_passed
        quality = 100.0 * sum(c.passed for c in checks) / len(checks) if checks else None
        source = "checks" if quality is not None else None
    elif verdict.status == "ok" and verdict.score is not None:
        passed = bool(verdict.passed) and record.checks_passed is not False
        quality, source = verdict.score, "judge"
    elif verdict.status == "skipped":  # the run produced no answer: nothing to pay a judge for
        passed, quality, source = False, 0.0, "judge"
    elif verdict.status == "budget-stopped":  # not judged yet; --resume judges it
        passed, quality = None, None
    else:
        passed, quality = False, None
    return {"passed": passed, "quality": quality, "quality_source": source}


def score(job: Job, record: RunRecord) -> RunRecord:
    return grade(with_checks(job, record))


def needs_judging(record: RunRecord) -> bool:
    return (
        record.status == "ok"
        and record.result is not None
        and (record.judge is None or record.judge.status == "budget-stopped")
    )


def to_verdict(spec: JudgeSpec, v: Verdict) -> JudgeVerdict:
    return JudgeVerdict(
        status=v.status,
        score=v.score,
        passed=v.passed,
        reason=v.reason,
        model=spec.model,
        calls=v.calls,
        usage={
            "prompt_tokens": v.prompt_tokens,
            "completion_tokens": v.completion_tokens,
            "total_tokens": v.prompt_tokens + v.completion_tokens,
            "estimated_credits": str(spec.credits * v.calls),
        },
        cost=v.cost,
        credits=v.credits,
        elapsed_ms=v.elapsed_ms,
        error=v.error,
        reply=v.reply,
    )


def journaled(record: RunRecord) -> RunRecord:
    """A finished cell's step outputs never go to the journal; the answer only while it still
    has to be judged (or with --include-answers). Steps of a cell still running are journaled
    with their outputs (``Journal.step``): a resume needs them to feed the steps left."""
    if record.result is None:
        return record
    steps = [s.model_copy(update={"output": None}) for s in record.result.steps]
    return record.model_copy(
        update={"result": record.result.model_copy(update={"steps": steps, "answer": ""})}
    )


def strip(record: RunRecord) -> RunRecord:
    """``public(record, False)`` made in place, without the four copies: only for a record (and
    result) that nothing else holds, like the one a worker just built from ``execute``."""
    if record.answer is not None:
        record.answer = None
    if record.result is not None:
        record.result.answer = ""
        for step in record.result.steps:
            step.output = None
    return record


def public(record: RunRecord, include_answers: bool) -> RunRecord:
    """What the receipt keeps: answers and step outputs only with --include-answers."""
    if include_answers:
        return record
    stripped = journaled(record)
    return stripped.model_copy(update={"answer": None})
