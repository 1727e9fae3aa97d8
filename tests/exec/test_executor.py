"""The executor against the real mock provider and the project's own pipelines."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.cli.main import main
from loomc.exec.executor import execute
from loomc.exec.ledger import Ledger
from loomc.exec.refusals import Refused
from loomc.ir.model import Fact, Pipeline, Pricing, StepGraph, StepNode
from loomc.policy.models import MockFault, MockRule, MockScript, ProviderConfig
from loomc.project import load_project
from loomc.providers.mock import MockProvider
from loomc.providers.registry import ProviderPool
from loomc.risk.factory import make_profiler
from loomc.units import Budget, Usage

ROOT = Path(__file__).resolve().parents[2]
LOW = "What is the capital of Poland? Return only the city."
HIGH = "Review this payment webhook handler for double-spend races and missing auth checks."


def _run(name: str, tier: str | None, prompt: str) -> object:
    project = load_project(ROOT)
    pipeline = project.compile(name, tier)

    async def go() -> object:
        async with ProviderPool(project.policy) as pool:
            return await execute(
                pipeline, prompt, pool=pool, profiler=make_profiler(project.policy.risk)
            )

    return anyio.run(go)


@pytest.mark.parametrize(
    ("name", "tier", "prompt", "calls"),
    [
        ("general", "balanced", LOW, 1),
        ("general", "balanced", HIGH, 2),
        ("general", "strict", LOW, 3),
        ("general", "lean", HIGH, 1),
        ("fixed", None, LOW, 4),
        ("baseline", None, HIGH, 1),
    ],
)
def test_default_policy_call_counts(name: str, tier: str | None, prompt: str, calls: int) -> None:
    result = _run(name, tier, prompt)
    assert result.calls == calls  # type: ignore[attr-defined]
    assert result.escalated == (calls > 1)  # type: ignore[attr-defined]


def test_balanced_escalation_records_reason_and_uses_editor_answer() -> None:
    result = _run("general", "balanced", HIGH)
    assert result.escalation_reason.startswith("high-risk task:")  # type: ignore[attr-defined]
    assert "money" in result.escalation_reason  # type: ignore[attr-defined]
    verify = next(s for s in result.steps if s.id == "verify")  # type: ignore[attr-defined]
    assert result.answer == verify.output  # type: ignore[attr-defined]
    low = _run("general", "balanced", LOW)
    assert low.stop_reason == "direct-answer-accepted"  # type: ignore[attr-defined]


def _step(
    sid: str,
    *,
    sees: tuple[str, ...] = (),
    retries: int = 0,
    timeout_ms: int = 5000,
    credits: str = "1",
    guard: object = None,
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
        max_tokens=50,
        timeout_ms=timeout_ms,
        retries=retries,
        credits=Decimal(credits),
        p95_ms=None,
        pricing=Pricing(Decimal("1"), Decimal("2")),
        guard=guard,
        sees=sees,
    )  # type: ignore[arg-type]


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
        input_tokens=500,
        backoff_base_ms=1,
        backoff_max_ms=5,
    )


def _pool(script: MockScript) -> ProviderPool:
    return ProviderPool({"mock": ProviderConfig(type="mock", mock=script)})


def test_fan_out_runs_in_parallel() -> None:
    latency = 300
    writers = [_step(f"w{i}") for i in range(4)]
    merge = _step("merge", sees=tuple(w.id for w in writers))
    pipeline = _pipeline([*writers, merge], Budget(latency_ms=10_000))

    async def go() -> float:
        start = time.monotonic()
        async with _pool(MockScript(latency_ms=latency)) as pool:
            result = await execute(pipeline, "hello", pool=pool)
        assert result.calls == 5
        return time.monotonic() - start

    elapsed = anyio.run(go)
    # 4 parallel writers + merge = 2 latencies, not 5
    assert elapsed < (latency * 3.5) / 1000, elapsed


def test_shared_ledger_never_overshoots() -> None:
    """Five concurrent calls that each fit alone but not together: only the ones that fit run."""
    shared = Ledger(Budget(calls=3, credits=Decimal(10)), name="eval")
    pipeline = _pipeline([_step("only")], Budget(calls=1))

    async def go() -> list[object]:
        results: list[object] = []
        async with _pool(MockScript(latency_ms=50)) as pool:
            mock = pool.get("mock")

            async def one(i: int) -> None:
                results.append(await execute(pipeline, f"p{i}", pool=pool, parent_ledger=shared))

            async with anyio.create_task_group() as tg:
                for i in range(5):
                    tg.start_soon(one, i)
            assert isinstance(mock, MockProvider)
            assert mock.calls == 3
        return results

    results = anyio.run(go)
    assert sum(r.calls for r in results) == 3  # type: ignore[attr-defined]
    assert sorted(r.stop_reason for r in results).count("max-calls-reached") == 2  # type: ignore[attr-defined]
    assert shared.committed.calls == 3


def test_ledger_reservation_is_atomic_and_reconciles() -> None:
    async def go() -> None:
        ledger = Ledger(Budget(credits=Decimal("2.5")))
        a = await ledger.reserve(Usage(calls=1, credits=Decimal(2)))
        assert not isinstance(a, Refused)
        refused = await ledger.reserve(Usage(calls=1, credits=Decimal(1)))
        assert isinstance(refused, Refused) and refused.stop_reason == "max-credits-reached"
        await ledger.reconcile(a, Usage(calls=1, credits=Decimal("0.5")))
        b = await ledger.reserve(Usage(calls=1, credits=Decimal(1)))
        assert not isinstance(b, Refused)
        assert ledger.committed.credits == Decimal("1.5")

    anyio.run(go)


def test_retries_honour_faults_and_reserve_each_attempt() -> None:
    script = MockScript(rules=[MockRule(fault=MockFault(kind="status", status=500, times=2))])
    pipeline = _pipeline([_step("a", retries=2)], Budget(calls=3))

    async def go() -> object:
        async with _pool(script) as pool:
            return await execute(pipeline, "x", pool=pool)

    result = anyio.run(go)
    assert result.calls == 3 and result.steps[0].status == "ok"  # type: ignore[attr-defined]
    # with a ceiling of 2 calls the third attempt is never sent
    tight = _pipeline([_step("a", retries=2)], Budget(calls=2))

    async def go2() -> object:
        async with _pool(script) as pool:
            return await execute(tight, "x", pool=pool)

    result2 = anyio.run(go2)
    assert result2.calls == 2 and result2.stop_reason == "max-calls-reached"  # type: ignore[attr-defined]


def test_unreported_usage_is_estimated_not_free() -> None:
    pipeline = _pipeline([_step("a")], Budget())

    async def go() -> object:
        async with _pool(MockScript(report_usage=False)) as pool:
            return await execute(pipeline, "count me", pool=pool)

    result = anyio.run(go)
    step = result.steps[0]  # type: ignore[attr-defined]
    assert (
        step.usage.estimated and step.usage.completion_tokens > 0 and step.usage.prompt_tokens > 0
    )


def test_deadline_cancels_in_flight_calls() -> None:
    pipeline = _pipeline([_step("slow")], Budget(latency_ms=200))

    async def go() -> tuple[object, float]:
        start = time.monotonic()
        async with _pool(MockScript(latency_ms=5000)) as pool:
            r = await execute(pipeline, "x", pool=pool)
        return r, time.monotonic() - start

    result, elapsed = anyio.run(go)
    assert result.stop_reason == "max-latency-reached"  # type: ignore[attr-defined]
    assert elapsed < 1.0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 5),
    max_calls=st.integers(0, 6),
    max_credits=st.integers(0, 6),
    latency=st.integers(0, 30),
    deadline_ms=st.integers(20, 200),
    fault=st.sampled_from([None, "status", "stream-cut", "timeout"]),
    edges=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=6),
)
def test_ceilings_hold_under_random_graphs(
    n: int,
    max_calls: int,
    max_credits: int,
    latency: int,
    deadline_ms: int,
    fault: str | None,
    edges: list[tuple[int, int]],
) -> None:
    sees: dict[int, set[str]] = {i: set() for i in range(n)}
    for a, b in edges:
        if a < b < n:
            sees[b].add(f"s{a}")
    steps = [
        _step(
            f"s{i}",
            sees=tuple(sorted(sees[i])),
            retries=1,
            timeout_ms=100,
            guard=Fact(("risk",)) if i % 2 else None,
        )
        for i in range(n)
    ]
    budget = Budget(calls=max_calls, credits=Decimal(max_credits), latency_ms=deadline_ms)
    rules = [MockRule(fault=MockFault(kind=fault, status=503, times=1))] if fault else []
    pipeline = _pipeline(steps, budget)

    async def go() -> tuple[object, float, MockProvider]:
        start = time.monotonic()
        async with _pool(MockScript(latency_ms=latency, rules=rules)) as pool:
            mock = pool.get("mock")
            r = await execute(pipeline, "random", pool=pool)
            assert isinstance(mock, MockProvider)
            return r, time.monotonic() - start, mock

    result, elapsed, mock = anyio.run(go)
    assert mock.calls <= max_calls
    assert result.calls <= max_calls  # type: ignore[attr-defined]
    assert result.budget.reserved_peak.credits <= max_credits  # type: ignore[attr-defined]
    assert elapsed <= deadline_ms / 1000 + 0.5


def test_run_cli_json_and_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    trace = tmp_path / "trace.jsonl"
    code = main(["run", "--json", "--tier", "strict", "--trace", str(trace), HIGH])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    for key in (
        "answer",
        "pipeline",
        "tier",
        "calls",
        "escalated",
        "escalation_reason",
        "stop_reason",
        "budget",
        "steps",
        "receipt_hash",
    ):
        assert key in doc
    assert doc["calls"] == 3 and doc["tier"] == "strict"
    assert {"limits", "used"} <= set(doc["budget"])
    assert {"id", "role", "model", "access", "elapsed_ms", "usage", "cost"} <= set(doc["steps"][0])
    kinds = [json.loads(line)["kind"] for line in trace.read_text().splitlines()]
    assert kinds[0] == "run-started" and kinds[-1] == "run-finished"
    assert kinds.count("step-finished") == 3


def test_run_cli_limit_below_the_worst_case_runs_and_warns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A command-line ceiling is a run-time limit, not a promise (DESIGN "Two kinds of
    # ceiling"): the run is admitted, the worst case above it is a warning, and the run stops
    # budget-limited before the step that would not fit.
    monkeypatch.chdir(ROOT)
    assert main(["run", "--tier", "strict", "--max-calls", "2", "hi"]) == 0
    err = capsys.readouterr().err
    assert "warning[LOOM401]" in err and "budget-limited" in err and "Traceback" not in err
    assert "no model was called" not in err


def test_api_key_never_in_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-test-SECRET-0123456789abcdef"
    monkeypatch.setenv("LOOMC_TEST_KEY", key)
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "policies").mkdir()
    (tmp_path / "pipelines" / "p.loom").write_text(
        'pipeline p { step a : writer(w) { task "t" max_tokens 10 timeout 2s } answer a }'
    )
    (tmp_path / "policies" / "default.yaml").write_text(
        "providers:\n  gw: {type: openai-compatible, base_url: 'http://127.0.0.1:9/v1', api_key: env:LOOMC_TEST_KEY}\n"
        "workers:\n  w: {model: gw/m}\n"
    )
    trace = tmp_path / "t.jsonl"
    code = main(
        [
            "run",
            "--project",
            str(tmp_path),
            "--pipeline",
            "p",
            "--json",
            "--trace",
            str(trace),
            "hi",
        ]
    )
    out = capsys.readouterr()
    assert code == 1
    assert key not in out.out + out.err + trace.read_text()
