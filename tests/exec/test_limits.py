"""Run-time limits (DESIGN "Two kinds of ceiling"): admitted, reserved per step, stopped
budget-limited with the reason, never overshot; promises are still proved by `loomc check`."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loomc
from loomc.checker.worstcase import worst_case
from loomc.cli.main import main
from loomc.exec.events import MemorySink
from loomc.exec.executor import execute
from loomc.ir.model import Pipeline, Pricing, StepGraph, StepNode
from loomc.policy.models import MockRule, MockScript, ProviderConfig
from loomc.project import load_project
from loomc.providers.mock import MockProvider
from loomc.providers.registry import ProviderPool
from loomc.units import Budget

ROOT = Path(__file__).resolve().parents[2]
HIGH = "Review this payment API."
OVERSHOOT_S = 0.3  # how far past its deadline a run may end (the measured worst is ~0.02 s)


def _json_run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    code = main(["run", *argv, "--project", str(ROOT), "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_the_reference_usage_runs_and_stops_budget_limited(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, err = _json_run(
        [
            HIGH,
            "--tier",
            "balanced",
            "--max-calls",
            "2",
            "--max-credits",
            "2",
            "--max-latency-ms",
            "30000",
        ],
        capsys,
    )
    assert code == 0, err
    # the worst cases above the limits are warnings, on stderr and in the JSON
    assert "warning[LOOM403]" in err and "warning[LOOM405]" in err
    assert [w["code"] for w in doc["warnings"]] == ["LOOM403", "LOOM405"]
    assert {w["severity"] for w in doc["warnings"]} == {"warning"}
    # the draft (1.5 credits) ran; the verifier (1 credit) would not fit in the 0.5 left
    assert doc["calls"] == 1 and doc["answer"]
    assert doc["stop_reason"] == "max-credits-reached" and doc["budget"]["limited"] is True
    assert doc["limited_by"] == {
        "outcome": "budget-limited",
        "dimension": "credits",
        "step": "verify",
        "needed": "1",
        "left": "0.5",
        "ceiling": "2",
        "source": "limit",
    }
    assert "budget-limited: step 'verify' needs 1 credits, 0.5 left of the limit 2" in err
    assert Decimal(doc["budget"]["used"]["credits"]) <= 2


def test_strict_with_one_call_runs_the_draft_and_stops(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = _json_run([HIGH, "--tier", "strict", "--max-calls", "1"], capsys)
    assert code == 0, err
    assert "warning[LOOM401]" in err
    assert doc["calls"] == 1 and doc["budget"]["used"]["calls"] == 1
    assert doc["limited_by"]["dimension"] == "calls" and doc["limited_by"]["step"] == "critique"
    direct = next(s for s in doc["steps"] if s["id"] == "direct")
    assert doc["answer"] == direct["output"]  # the best answer so far


def test_check_still_proves_command_line_ceilings(capsys: pytest.CaptureFixture[str]) -> None:
    # `loomc check --max-*` is the CI gate: there a ceiling is a promise, and it fails
    assert main(["check", str(ROOT), "--max-calls", "1"]) == 1
    assert "error[LOOM401]" in capsys.readouterr().err


def test_json_prints_an_object_when_the_run_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "hi", "--pipeline", "nope", "--project", str(ROOT), "--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 1 and doc["summary"]["errors"] == 1 and doc["summary"]["refused"] is True
    assert doc["diagnostics"][0]["code"] == "LOOM203"
    assert "no model was called" in err


def test_a_limit_tighter_than_no_worst_case_gives_no_warning() -> None:
    result = loomc.run(HIGH, project=ROOT, tier="lean", ceilings=Budget(calls=5))
    assert result.warnings == [] and result.limited_by is None
    assert not result.budget.limited and result.budget.limits.calls == 1  # the tier's promise


def test_the_answer_chain_not_reached_keeps_the_best_answer_so_far() -> None:
    steps = [_step("draft"), _step("polish", sees=("draft",))]
    pipeline = replace(_pipeline(steps, Budget()), limits=Budget(calls=1))

    async def go() -> loomc.RunResult:
        async with _pool(MockScript()) as pool:
            return await execute(pipeline, "x", pool=pool)

    result = anyio.run(go)
    draft = result.steps[0]
    assert result.answer == draft.output and result.answer  # `answer polish` never ran
    assert result.limited_by is not None and result.limited_by.step == "polish"


def test_receipt_credits_and_estimates_are_labelled_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = (ROOT / "policies" / "default.yaml").read_text()
    policy = policy.replace(
        "      rules: []", "      rules:\n        - role: critic\n          spent_credits: 0.25"
    )
    path = tmp_path / "receipts.yaml"
    path.write_text(policy)
    code = main(["run", HIGH, "--tier", "strict", "--project", str(ROOT), "--policy", str(path)])
    err = capsys.readouterr().err
    assert code == 0
    # the critic's receipt is exact; the drafter's and the finalizer's credits are estimates
    assert "credits 0.25 (receipts) + ~3.0 (estimated)" in err
    result = loomc.run(HIGH, project=ROOT, policy=path, tier="strict")
    models = result.models
    assert models["mock/critic-small"].credits == Decimal("0.25")
    assert models["mock/critic-small"].estimated_credits == 0
    assert models["mock/finalizer-small"].credits is None
    assert models["mock/finalizer-small"].calls == 2
    assert models["mock/finalizer-small"].estimated_credits == Decimal("3.0")
    assert sum(m.calls for m in models.values()) == result.calls == 3
    assert sum(m.tokens for m in models.values()) == result.tokens
    assert result.budget.used.latency_ms == result.elapsed_ms


def test_a_workers_max_tokens_caps_its_steps(tmp_path: Path) -> None:
    policy = (ROOT / "policies" / "default.yaml").read_text()
    path = tmp_path / "capped.yaml"
    path.write_text(
        policy.replace("    max_tokens: 900", "    max_tokens: 300").replace(
            "    p95_latency: 8s", "    p95_latency: 8s\n    temperature: 0.4"
        )
    )
    project = load_project(ROOT, path)
    pipeline = project.compile("general", "strict")
    steps = {s.id: s for s in pipeline.graph.steps()}
    assert {s.max_tokens for s in steps.values()} == {300}  # the steps ask for 700 and 900
    assert steps["direct"].temperature is None  # `direct` runs on the finalizer worker
    assert worst_case(pipeline).tokens == 3 * 300 + (4000 + 4000 + 300 + 4000 + 300 + 300)
    # a worker's temperature reaches its steps
    code_review = project.compile("fixed", None)
    drafter_steps = [s for s in code_review.graph.steps() if s.worker == "drafter"]
    assert drafter_steps and all(s.temperature == 0.4 for s in drafter_steps)


def _step(
    sid: str, *, sees: tuple[str, ...] = (), credits: str = "1", max_tokens: int = 40
) -> StepNode:
    return StepNode(
        id=sid,
        role="writer",
        worker="w",
        model="mock/m",
        provider="mock",
        provider_type="mock",
        group="g",
        task=f"task {sid}",
        max_tokens=max_tokens,
        timeout_ms=5000,
        retries=0,
        credits=Decimal(credits),
        p95_ms=None,
        pricing=Pricing(Decimal("1"), Decimal("2")),
        sees=sees,
    )


def _pipeline(steps: list[StepNode], budget: Budget) -> Pipeline:
    return Pipeline(
        name="t",
        tier=None,
        policy="test",
        instruction="",
        graph=StepGraph({s.id: s for s in steps}),
        answer=(steps[-1].id,),
        budget=budget,
        pipeline_budget=budget,
        tier_budget=Budget(),
        input_tokens=200,
        backoff_base_ms=1,
        backoff_max_ms=5,
    )


def _pool(script: MockScript) -> ProviderPool:
    return ProviderPool({"mock": ProviderConfig(type="mock", mock=script)})


OVERSHOOTS: list[float] = []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 5),
    chain=st.booleans(),
    calls=st.none() | st.integers(0, 5),
    credits=st.none() | st.integers(0, 6),
    tokens=st.none() | st.integers(0, 2000),
    deadline_ms=st.none() | st.integers(10, 250),
    latencies=st.lists(st.integers(0, 120), min_size=5, max_size=5),
    step_credits=st.lists(st.sampled_from(["0", "0.5", "1", "2"]), min_size=5, max_size=5),
    usage=st.booleans(),
)
def test_no_call_is_sent_past_a_run_limit(
    n: int,
    chain: bool,
    calls: int | None,
    credits: int | None,
    tokens: int | None,
    deadline_ms: int | None,
    latencies: list[int],
    step_credits: list[str],
    usage: bool,
) -> None:
    steps = [
        _step(f"s{i}", sees=(f"s{i - 1}",) if chain and i else (), credits=step_credits[i])
        for i in range(n)
    ]
    limits = Budget(
        calls=calls,
        tokens=tokens,
        latency_ms=deadline_ms,
        credits=None if credits is None else Decimal(credits),
    )
    pipeline = replace(_pipeline(steps, Budget()), limits=limits)
    rules = [MockRule(pattern=f"task s{i}\\b", latency_ms=latencies[i]) for i in range(n)]
    script = MockScript(rules=rules, report_usage=usage, stream_chunk_words=2)

    async def go() -> tuple[loomc.RunResult, float, MockProvider]:
        async with _pool(script) as pool:
            mock = pool.get("mock")
            assert isinstance(mock, MockProvider)
            start = time.monotonic()
            r = await execute(pipeline, "random", pool=pool, sinks=[MemorySink()])
            return r, time.monotonic() - start, mock

    result, elapsed, mock = anyio.run(go)
    sent = mock.calls  # counted at the provider
    assert result.budget.used.calls == sent == result.calls  # every request sent is booked
    if calls is not None:
        assert sent <= calls
    peak = result.budget.reserved_peak
    assert peak is not None
    if credits is not None:
        assert peak.credits <= credits and result.budget.used.credits <= credits
    if tokens is not None:
        assert peak.tokens <= tokens
    if deadline_ms is not None:
        OVERSHOOTS.append(elapsed - deadline_ms / 1000)
        assert elapsed <= deadline_ms / 1000 + OVERSHOOT_S
    if result.budget.limited:
        assert result.limited_by is not None and result.limited_by.source == "limit"
    for step in result.steps:
        if step.attempts:
            assert step.usage.total_tokens > 0  # a sent call is never booked as free
    assert result.budget.used.latency_ms == result.elapsed_ms
