"""The step nodes of one pipeline x tier: each step's worker, model, provider, limits, price and
guard resolved against the policy."""

from __future__ import annotations

from loomc.ir.budgets import UNIT_TEXT
from loomc.ir.collector import Collector
from loomc.ir.guards import GuardResolver
from loomc.ir.model import Const, Pricing, StepNode
from loomc.policy.load import PolicySource
from loomc.syntax import ast
from loomc.text import did_you_mean


def build_steps(
    decl: ast.PipelineDecl,
    policy: PolicySource,
    resolver: GuardResolver,
    tier: str | None,
    out: Collector,
    bad_guards: set[str],
) -> list[StepNode]:
    """The step nodes of one tier: policy resolved, guards folded (a step whose guard is false
    in this tier is left out), unknown references left out (they are reported elsewhere)."""
    pol = policy.policy
    names = {s.name.value for s in decl.steps}
    steps: list[StepNode] = []
    seen: set[str] = set()
    workers_used: set[str] = set()  # LOOM210 is reported once per worker
    for s in decl.steps:
        if s.name.value in seen:
            continue
        seen.add(s.name.value)
        errors = resolver.errors
        guard = resolver.resolve(s.when, tier) if s.when is not None else None
        if resolver.errors > errors:
            # The guard's error is reported; analysing the step as unguarded keeps its
            # consequences (a folded-away step, a skippable read) from being reported as well.
            bad_guards.add(s.name.value)
            guard = None
        if isinstance(guard, Const):
            if not guard.value:
                continue  # statically false in this tier: the step is not part of this graph
            guard = None
        worker = pol.workers.get(s.worker.value)
        model = worker.model if worker else f"unknown/{s.worker.value}"
        provider = model.split("/", 1)[0]
        provider_cfg = pol.providers.get(provider)
        if worker is not None and provider_cfg is None and s.worker.value not in workers_used:
            out.error(
                "LOOM210",
                f"worker {s.worker.value!r} uses model {model!r} whose provider {provider!r} is "
                "not defined",
                s.worker.span,
                did_you_mean(provider, pol.providers)
                or f"providers are {', '.join(pol.providers)}",
            )
        price = pol.pricing.get(model)
        max_tokens = _whole(s.max_tokens, "max_tokens", out, allow_zero=False)
        worker_cap = worker.max_tokens if worker else None
        if max_tokens is None:
            max_tokens = worker_cap or pol.defaults.max_tokens
        elif worker_cap is not None:
            max_tokens = min(max_tokens, worker_cap)  # a worker's max_tokens caps its steps
        timeout = _duration(s.timeout, out)
        if timeout is None:
            timeout = (worker.timeout if worker else None) or pol.defaults.timeout
        retries = _whole(s.retries, "retries", out, allow_zero=True)
        if retries is None:
            retries = (
                worker.retries if worker and worker.retries is not None else pol.defaults.retries
            )
        workers_used.add(s.worker.value)
        steps.append(
            StepNode(
                id=s.name.value,
                role=s.role.value,
                worker=s.worker.value,
                model=model,
                provider=provider,
                provider_type=provider_cfg.type if provider_cfg else "unknown",
                group=worker.provider_group if worker else provider,
                task=s.task.value if s.task else "",
                max_tokens=max_tokens,
                temperature=worker.temperature if worker else None,
                timeout_ms=timeout,
                retries=retries,
                credits=(
                    pol.worker_budget_credits(s.worker.value)
                    if worker
                    else pol.defaults.credits_per_call
                ),
                p95_ms=worker.p95_latency if worker else None,
                pricing=Pricing(price.input_per_million, price.output_per_million)
                if price
                else None,
                guard=guard,
                # self-references (LOOM216) and unknown steps (LOOM203) are reported and left out
                sees=tuple(
                    i.name.value
                    for i in s.sees
                    if not i.optional and i.name.value != s.name.value and i.name.value in names
                ),
                optional_sees=tuple(
                    i.name.value
                    for i in s.sees
                    if i.optional and i.name.value != s.name.value and i.name.value in names
                ),
                after=tuple(
                    n.value for n in s.after if n.value != s.name.value and n.value in names
                ),
                span=s.span,
                resolved=worker is not None,
                guard_unresolved=s.name.value in bad_guards,
            )
        )
    return steps


def _whole(q: ast.Quantity | None, what: str, out: Collector, *, allow_zero: bool) -> int | None:
    if q is None:
        return None
    if q.unit not in (None, "tokens"):
        out.error(
            "LOOM410", f"`{what}` takes a whole number, not {UNIT_TEXT[q.unit]} ({q.text})", q.span
        )
        return None
    if q.value != q.value.to_integral_value() or q.value < 0 or (q.value == 0 and not allow_zero):
        out.error(
            "LOOM414",
            f"`{what}` must be a {'non-negative' if allow_zero else 'positive'} "
            f"whole number ({q.text})",
            q.span,
        )
        return None
    return int(q.value)


def _duration(q: ast.Quantity | None, out: Collector) -> int | None:
    if q is None:
        return None
    if q.unit != "ms":
        out.error(
            "LOOM410",
            f"`timeout` is a duration, not {UNIT_TEXT[q.unit]} ({q.text})",
            q.span,
            "write e.g. `timeout 20s`",
        )
        return None
    if q.value <= 0:
        out.error("LOOM414", f"`timeout` must be positive ({q.text})", q.span)
        return None
    return int(q.value)
