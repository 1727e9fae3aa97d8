"""A pipeline's fixed part (``loomc.exec.prepared``) is worked out once per compiled pipeline
and is what the per-run code would have computed: the same system messages, worst cases,
order and limits; a pipeline built with other limits gets its own; the table stays bounded."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from loomc.checker.worstcase import step_attempt_cost
from loomc.exec import prepared as prepared_module
from loomc.exec.prepared import prepared
from loomc.exec.prompting import system_message
from loomc.exec.schedule import input_tokens, is_chain
from loomc.ir.graph import StepGraph
from loomc.ir.model import Pipeline, StepNode
from loomc.units import Budget
from tests.exec.test_executor import _pipeline as executor_pipeline
from tests.exec.test_executor import _step as executor_step


def _step(sid: str, sees: tuple[str, ...] = (), role: str = "writer") -> StepNode:
    step = executor_step(sid, sees=sees, retries=2, timeout_ms=2500, credits="1.5")
    return replace(step, role=role)


def _pipeline(budget: Budget | None = None) -> Pipeline:
    steps = [_step("draft", role="drafter"), _step("review", ("draft",), role="critic")]
    pipeline = executor_pipeline(steps, budget or Budget(calls=3))
    return replace(pipeline, instruction="Answer carefully.", backoff_base_ms=7, input_tokens=900)


def test_the_fixed_part_is_what_each_run_would_compute() -> None:
    pipeline = _pipeline()
    plan = prepared(pipeline)
    assert prepared(pipeline) is plan  # worked out once
    order = pipeline.graph.topological_order()
    assert plan.order == order == ["draft", "review"] and plan.chain == is_chain(pipeline, order)
    assert plan.enforced == pipeline.enforced
    assert plan.input_base + 40 == input_tokens(pipeline, "x" * 120)  # 120 characters: 40
    for step in pipeline.graph.steps():
        fixed = plan.steps[step.id]
        assert fixed.system == system_message(pipeline, step)
        worst = step_attempt_cost(pipeline, step)
        assert fixed.reserve.tokens == (worst.input_tokens or 0) + (worst.output_tokens or 0)
        assert fixed.reserve.cost == worst.cost and fixed.reserve.credits == Decimal("1.5")
        assert (fixed.retry.attempts, fixed.retry.backoff_base_ms) == (3, 7)
        assert fixed.timeout_s == 2.5 and not fixed.unpriced


def test_a_pipeline_with_other_limits_gets_its_own_fixed_part() -> None:
    pipeline = _pipeline()
    limited = replace(pipeline, limits=Budget(calls=1, cost=Decimal("0.5")))
    plan, other = prepared(pipeline), prepared(limited)
    assert other is not plan
    assert plan.enforced.calls == 3 and other.enforced.calls == 1
    assert other.warnings and not plan.warnings  # the worst case passes the run-time limit
    unpriced = replace(
        limited, graph=StepGraph({"s": replace(_step("s"), pricing=None)}), answer=("s",)
    )
    assert prepared(unpriced).steps["s"].unpriced  # a money ceiling and no pricing


def test_the_table_stays_bounded() -> None:
    kept = [_pipeline(Budget(calls=n + 1)) for n in range(prepared_module._ENTRIES + 40)]
    for pipeline in kept:
        prepared(pipeline)
    assert len(prepared_module._PREPARED) <= prepared_module._ENTRIES
    assert prepared(kept[-1]).pipeline is kept[-1]
