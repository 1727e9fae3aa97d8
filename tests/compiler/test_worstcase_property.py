"""The worst-case analysis equals a brute-force enumeration of every guard outcome."""

from __future__ import annotations

import itertools
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.checker.worstcase import step_attempt_cost, step_latency_ms, worst_case
from loomc.ir.model import Fact, Pipeline, Pricing, StepGraph, StepNode
from loomc.units import Budget

GUARD = Fact(("risk",))


@st.composite
def pipelines(draw: st.DrawFn) -> Pipeline:
    n = draw(st.integers(1, 6))
    steps: dict[str, StepNode] = {}
    for i in range(n):
        sid = f"s{i}"
        earlier = [f"s{j}" for j in range(i)]
        sees = tuple(sorted(draw(st.sets(st.sampled_from(earlier), max_size=2)))) if earlier else ()
        priced = draw(st.booleans())
        steps[sid] = StepNode(
            id=sid,
            role="writer",
            worker="w",
            model=f"p/m{i}",
            provider="p",
            provider_type="mock",
            group=f"g{i % 2}",
            task="t",
            max_tokens=draw(st.integers(1, 500)),
            timeout_ms=draw(st.integers(1, 5000)),
            retries=draw(st.integers(0, 2)),
            credits=Decimal(draw(st.integers(0, 20))) / 4,
            p95_ms=None,
            pricing=Pricing(Decimal("0.5"), Decimal("1.5")) if priced else None,
            guard=GUARD if draw(st.booleans()) else None,
            sees=sees,
        )
    return Pipeline(
        name="p",
        tier=None,
        policy="x",
        instruction="",
        graph=StepGraph(steps),
        answer=(f"s{n - 1}",),
        budget=Budget(),
        pipeline_budget=Budget(),
        tier_budget=Budget(),
        input_tokens=draw(st.integers(1, 1000)),
    )


def brute_force(p: Pipeline) -> tuple[int, int, Decimal, Decimal | None, int]:
    ids = p.graph.topological_order()
    guarded = [s for s in ids if p.graph.step(s).guard is not None]
    best = (0, 0, Decimal(0), Decimal(0), 0)
    best_cost: Decimal | None = Decimal(0)
    for outcome in itertools.product([False, True], repeat=len(guarded)):
        truth = dict(zip(guarded, outcome, strict=True))
        ran: set[str] = set()
        for sid in ids:
            step = p.graph.step(sid)
            if truth.get(sid, True) and all(d in ran for d in step.sees):
                ran.add(sid)
        calls = sum(p.graph.step(s).attempts for s in ran)
        credits = sum((p.graph.step(s).credits * p.graph.step(s).attempts for s in ran), Decimal(0))
        tokens = 0
        cost: Decimal | None = Decimal(0)
        for s in ran:
            one = step_attempt_cost(p, p.graph.step(s))
            tokens += ((one.input_tokens or 0) + (one.output_tokens or 0)) * p.graph.step(
                s
            ).attempts
            cost = (
                None
                if cost is None or one.cost is None
                else cost + one.cost * p.graph.step(s).attempts
            )
        # longest path over the steps that ran
        finish: dict[str, int] = {}
        for sid in ids:
            if sid in ran:
                deps = [finish[d] for d in p.graph.predecessors(sid) if d in finish]
                finish[sid] = max(deps, default=0) + step_latency_ms(p, p.graph.step(sid))
        latency = max(finish.values(), default=0)
        best = (
            max(best[0], calls),
            max(best[1], tokens),
            max(best[2], credits),
            Decimal(0),
            max(best[4], latency),
        )
        if cost is None or best_cost is None:
            if ran and any(p.graph.step(s).pricing is None for s in ran):
                best_cost = None
        else:
            best_cost = max(best_cost, cost)
    return best[0], best[1], best[2], best_cost, best[4]


@settings(max_examples=150, deadline=None)
@given(pipelines())
def test_worst_case_equals_brute_force(p: Pipeline) -> None:
    wc = worst_case(p)
    calls, tokens, credits, cost, latency = brute_force(p)
    assert wc.calls == calls
    assert wc.tokens == tokens
    assert wc.credits == credits
    assert wc.latency_ms == latency
    if cost is not None:
        assert wc.cost == cost
    else:
        assert wc.cost is None
