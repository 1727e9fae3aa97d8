"""Worst-case resource analysis of one compiled pipeline.

Dynamic guards are assumed possibly true (a sound over-approximation): every step present in
the tier's graph may run, each attempt of it (retries included) is paid for, and a step's input
is bounded by the pipeline's input-token bound plus the outputs it may read. Latency is the
longest path by per-step timeout x attempts (parallel branches count once); the expected latency
uses the workers' p95 instead.
"""

from __future__ import annotations

from decimal import Decimal

from loomc.frozen import Frozen
from loomc.ir.model import Pipeline, StepNode
from loomc.units import Dimension, money_for_tokens


class StepCost(Frozen):
    step: str
    attempts: int
    input_tokens: int | None
    output_tokens: int | None
    credits: Decimal
    cost: Decimal | None  # None when unpriced or unbounded
    latency_ms: int


class WorstCase(Frozen):
    pipeline: str
    tier: str | None
    calls: int
    tokens: int | None  # None = unbounded (a step lacks max_tokens)
    credits: Decimal
    cost: Decimal | None  # None = unknown (a model lacks pricing) or unbounded
    latency_ms: int
    expected_latency_ms: int | None
    latency_path: tuple[str, ...]
    unpriced_models: tuple[str, ...] = ()
    unbounded_steps: tuple[str, ...] = ()
    steps: tuple[StepCost, ...] = ()

    def get(self, dimension: Dimension) -> int | Decimal | None:
        return {
            Dimension.CALLS: self.calls,
            Dimension.TOKENS: self.tokens,
            Dimension.CREDITS: self.credits,
            Dimension.COST: self.cost,
            Dimension.LATENCY: self.latency_ms,
        }[dimension]

    def to_json(self) -> dict[str, object]:
        return {
            "pipeline": self.pipeline,
            "tier": self.tier,
            "calls": self.calls,
            "tokens": self.tokens,
            "credits": str(self.credits),
            "cost": None if self.cost is None else str(self.cost),
            "latency_ms": self.latency_ms,
            "expected_latency_ms": self.expected_latency_ms,
            "latency_path": list(self.latency_path),
            "unpriced_models": list(self.unpriced_models),
            "unbounded_steps": list(self.unbounded_steps),
        }


def step_input_bound(pipeline: Pipeline, step: StepNode) -> int | None:
    """Prompt tokens a step can be sent: the input bound plus every output it may read."""
    total = pipeline.input_tokens
    for dep in step.access:
        if dep not in pipeline.graph:
            continue
        produced = pipeline.graph.step(dep).max_tokens
        if produced is None:
            return None
        total += produced
    return total


def step_attempt_cost(pipeline: Pipeline, step: StepNode) -> StepCost:
    """The worst case of one attempt of ``step``: what the ledger reserves before sending it."""
    inp = step_input_bound(pipeline, step)
    cost: Decimal | None = None
    if step.pricing is not None and inp is not None and step.max_tokens is not None:
        cost = money_for_tokens(
            inp, step.max_tokens, step.pricing.input_per_million, step.pricing.output_per_million
        )
    return StepCost(step.id, 1, inp, step.max_tokens, step.credits, cost, step.timeout_ms)


def step_latency_ms(pipeline: Pipeline, step: StepNode) -> int:
    """Timeout per attempt, plus the longest backoff between attempts."""
    return step.timeout_ms * step.attempts + pipeline.backoff_max_ms * step.retries


def worst_case(pipeline: Pipeline) -> WorstCase:
    steps = list(pipeline.graph.steps())
    calls = sum(s.attempts for s in steps)
    credits = sum((s.credits * s.attempts for s in steps), Decimal(0))
    tokens: int | None = 0
    cost: Decimal | None = Decimal(0)
    unpriced: set[str] = set()
    unbounded: list[str] = []
    costs: list[StepCost] = []
    for s in steps:
        one = step_attempt_cost(pipeline, s)
        costs.append(
            StepCost(
                s.id,
                s.attempts,
                one.input_tokens,
                one.output_tokens,
                one.credits * s.attempts,
                None if one.cost is None else one.cost * s.attempts,
                step_latency_ms(pipeline, s),
            )
        )
        if one.input_tokens is None or one.output_tokens is None:
            unbounded.append(s.id)
            tokens = None
            cost = None
            continue
        if tokens is not None:
            tokens += (one.input_tokens + one.output_tokens) * s.attempts
        if s.pricing is None:
            unpriced.add(s.model)
            cost = None
        elif cost is not None and one.cost is not None:
            cost += one.cost * s.attempts
    latency, path = pipeline.graph.longest_path({s.id: step_latency_ms(pipeline, s) for s in steps})
    expected: int | None = None
    if all(s.p95_ms is not None for s in steps):
        expected, _ = pipeline.graph.longest_path({s.id: int(s.p95_ms or 0) for s in steps})
    return WorstCase(
        pipeline=pipeline.name,
        tier=pipeline.tier,
        calls=calls,
        tokens=tokens,
        credits=credits,
        cost=cost,
        latency_ms=latency,
        expected_latency_ms=expected,
        latency_path=tuple(path),
        unpriced_models=tuple(sorted(unpriced)),
        unbounded_steps=tuple(unbounded),
        steps=tuple(costs),
    )
