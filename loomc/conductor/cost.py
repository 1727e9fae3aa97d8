"""What a served planner's calls cost, and the most any plan the guard can accept may cost.

A planner's own calls are spent like any other in an eval: the pre-flight worst case includes
them and each is reserved in the eval-wide ledger before it is sent. Their price comes from the
policy where it knows the endpoint: a provider whose ``base_url`` is the endpoint, and the
``PROVIDER/MODEL`` of the served model in ``pricing`` (money) and among the workers (credits per
call, the worker's reservation estimate). An endpoint the policy does not know is counted in
calls and tokens, and marked unpriced: its money is unknown, its credits 0.

`plan_bound` is what the pre-flight counts for a case that is not planned yet (a learned
planner is only asked once the eval starts, so a dry run sends nothing): the most, axis by axis,
of every plan of the 15-plan space whose compiled pipeline passes the checker under the case's
ceilings. An accepted plan is one of them (the guard compiles and checks it the same way), so
the bound is never below what runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from loomc.checker.rules import check_pipeline
from loomc.checker.worstcase import WorstCase, worst_case
from loomc.conductor.outcome import Outcome, enumerate_candidates
from loomc.conductor.plan import Plan, PlanParseError
from loomc.conductor.plan_ir import GuardContext, compile_plan
from loomc.conductor.search import label_record
from loomc.ir.model import Pipeline, Pricing
from loomc.policy.models import Policy


@dataclass(frozen=True)
class EndpointPrice:
    """The policy's price for a served planner's model; ``ref`` is None when it has none."""

    pricing: Pricing | None
    credits: Decimal
    ref: str | None  # PROVIDER/MODEL the price was found under


def _norm(url: str) -> str:
    return url.strip().rstrip("/").lower()


def endpoint_price(policy: Policy, endpoint: str, model: str) -> EndpointPrice:
    """The policy's price of ``model`` served at ``endpoint`` (see the module docstring)."""
    for name, provider in policy.providers.items():
        if provider.base_url is None or _norm(provider.base_url) != _norm(endpoint):
            continue
        ref = f"{name}/{model}"
        price = policy.pricing.get(ref)
        pricing = (
            None if price is None else Pricing(price.input_per_million, price.output_per_million)
        )
        worker = next((w for w, cfg in policy.workers.items() if cfg.model == ref), None)
        credits = policy.worker_budget_credits(worker) if worker is not None else Decimal(0)
        if pricing is not None or worker is not None:
            return EndpointPrice(pricing, credits, ref)
    return EndpointPrice(None, Decimal(0), None)


@dataclass(frozen=True)
class Bound:
    """The pre-flight's stand-in for a case not planned yet: ``worst`` is the most any
    admissible plan may spend; ``pipeline`` the admissible plan with the longest answer (the
    judge's input bound reads it)."""

    pipeline: Pipeline
    worst: WorstCase


def _candidates(context: GuardContext) -> list[Pipeline]:
    """The compiled pipelines of the 15-plan space that pass the checker under the ceilings."""
    out = []
    for cand in enumerate_candidates(context.workers):
        label = label_record(context.limits.constraints, cand, Outcome(0.5, 0.5), ["bound"])
        try:
            plan = Plan.from_json(label, worker_ids=context.worker_ids)
        except PlanParseError:
            continue
        pipeline, diags = compile_plan(plan, context)
        if pipeline is None or any(d.is_error for d in diags):
            continue
        if any(d.is_error for d in check_pipeline(pipeline)):
            continue
        out.append(pipeline)
    return out


def _answer_bound(pipeline: Pipeline) -> float:
    caps = [pipeline.graph.step(s).max_tokens for s in pipeline.answer if s in pipeline.graph]
    return float("inf") if not caps or None in caps else float(max(c for c in caps if c))


def plan_bound(context: GuardContext) -> Bound | None:
    """The bound of every admissible plan; None when no plan passes (the case cannot run)."""
    pipelines = _candidates(context)
    if not pipelines:
        return None
    worst = [worst_case(p) for p in pipelines]
    tokens = [w.tokens for w in worst]
    costs = [w.cost for w in worst]
    top = max(pipelines, key=_answer_bound)
    bound = WorstCase(
        pipeline=top.name,
        tier="conductor-bound",
        calls=max(w.calls for w in worst),
        tokens=None if None in tokens else max(t for t in tokens if t is not None),
        credits=max(w.credits for w in worst),
        cost=None if None in costs else max(c for c in costs if c is not None),
        latency_ms=max(w.latency_ms for w in worst),
        expected_latency_ms=None,
        latency_path=(),
        unpriced_models=tuple(sorted({m for w in worst for m in w.unpriced_models})),
    )
    return Bound(replace(top, tier="conductor-bound"), bound)
