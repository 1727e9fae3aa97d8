"""The pre-flight's bound for a case not planned yet is never below what the guard lets run:
for random ceilings and prompts, every plan of the 15-plan space the guard accepts (and the
risk planner's fallback) spends no more, axis by axis, than `plan_bound`; and the policy's
price of a served planner is found only where the policy knows its endpoint."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.api.running import planning_base, widest_tier
from loomc.checker.worstcase import worst_case
from loomc.conductor.cost import endpoint_price, plan_bound
from loomc.conductor.guard import Guard, context_for_run
from loomc.conductor.outcome import Outcome, enumerate_candidates
from loomc.conductor.search import label_record
from loomc.policy.models import Policy
from loomc.project import load_project
from loomc.risk.factory import make_profiler
from loomc.units import Budget

ROOT = Path(__file__).resolve().parents[2]
PROJECT = load_project(ROOT)
PROFILER = make_profiler(PROJECT.policy.risk)
PROMPTS = [
    "Define a mutex.",
    "Review this payment webhook handler for double-spend races and missing auth checks.",
    "Summarise the attached incident timeline for the on-call handover.",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.none() | st.integers(1, 4),
    credits=st.none() | st.decimals(Decimal("0.5"), Decimal("6"), places=1),
    latency=st.none() | st.integers(5_000, 60_000),
    prompt=st.sampled_from(PROMPTS),
    pipeline=st.sampled_from(["general", "code-review"]),
)
def test_no_accepted_plan_spends_more_than_the_bound(
    calls: int | None, credits: Decimal | None, latency: int | None, prompt: str, pipeline: str
) -> None:
    overrides = Budget(calls=calls, credits=credits, latency_ms=latency)
    base = planning_base(PROJECT, pipeline, widest_tier(PROJECT), overrides)
    ctx = context_for_run(PROJECT.policy_source, base, prompt, PROFILER.profile(prompt, base.kind))
    bound = plan_bound(ctx)
    guard = Guard(ctx)
    accepted = []
    for cand in enumerate_candidates(ctx.workers):
        label = label_record(ctx.limits.constraints, cand, Outcome(0.5, 0.5), ["x"])
        review = guard.review(label)
        if review.accepted:
            assert review.pipeline is not None
            accepted.append(review.pipeline)
    try:
        fallback = guard.decide_review("learned", guard.review("not a plan"))
        accepted.append(fallback.pipeline)
    except Exception:  # no plan passes: then no bound either
        assert not accepted and bound is None
        return
    assert bound is not None
    if calls is None and credits is None and latency is None:
        assert len(accepted) > 10  # not vacuous: most of the space passes without ceilings
    for pipe in accepted:
        wc = worst_case(pipe)
        assert wc.calls <= bound.worst.calls and wc.credits <= bound.worst.credits
        assert wc.latency_ms <= bound.worst.latency_ms
        assert bound.worst.tokens is None or (
            wc.tokens is not None and wc.tokens <= bound.worst.tokens
        )
        if bound.worst.cost is not None:
            assert wc.cost is not None and wc.cost <= bound.worst.cost


def test_a_served_planner_is_priced_only_where_the_policy_knows_its_endpoint() -> None:
    data = PROJECT.policy.model_dump(mode="json")
    data["providers"]["host"] = {"type": "openai-compatible", "base_url": "http://h:8000/v1/"}
    data["pricing"]["host/conductor"] = {"input_per_million": "2", "output_per_million": "8"}
    data["workers"]["planner"] = {"model": "host/conductor", "credits": "0.75"}
    policy = Policy.model_validate(data)
    price = endpoint_price(policy, "http://H:8000/v1", "conductor")
    assert price.ref == "host/conductor" and price.credits == Decimal("0.75")
    assert price.pricing is not None and price.pricing.output_per_million == Decimal(8)
    assert endpoint_price(policy, "http://h:8000/v1", "other").ref is None
    assert endpoint_price(policy, "http://elsewhere:8000/v1", "conductor").pricing is None
