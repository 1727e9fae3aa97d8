"""Compile AST + policy into one IR `Pipeline` per pipeline x tier.

Name resolution errors are collected, not raised; a pipeline with errors still compiles as far as
it can so the checker reports everything at once. Static guards (the tier) are folded here, so
a step whose guard is false in a tier is simply absent from that tier's graph.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.ir.guards import GuardResolver
from loomc.ir.model import Const, Pipeline, Pricing, Require, StepGraph, StepNode
from loomc.policy.load import PolicySource
from loomc.syntax import ast
from loomc.text import did_you_mean
from loomc.units import Budget, Dimension

ROLES = (
    "router",
    "drafter",
    "writer",
    "editor",
    "critic",
    "verifier",
    "finalizer",
    "aggregator",
    "researcher",
    "summarizer",
    "judge",
)
PIPELINE_KINDS = {
    "code-review": "code-review",
    "code_review": "code-review",
    "research": "research",
}


class _Collector:
    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def __call__(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.items.append(Diagnostic(code, Severity.ERROR, message, span, hint))

    def warn(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.items.append(Diagnostic(code, Severity.WARNING, message, span, hint))


def compile_modules(
    modules: Iterable[ast.Module], policy: PolicySource, overrides: Budget | None = None
) -> tuple[list[Pipeline], list[Diagnostic]]:
    """Every pipeline of every module, for every tier it is compiled for."""
    out = _Collector()
    seen: dict[str, ast.PipelineDecl] = {}
    pipelines: list[Pipeline] = []
    for module in modules:
        for decl in module.pipelines:
            if decl.name.value in seen:
                first = seen[decl.name.value]
                out.error(
                    "LOOM201",
                    f"pipeline {decl.name.value!r} is defined twice",
                    decl.name.span,
                    f"the first definition is at {first.name.span.file}:{first.name.span.line}",
                )
                continue
            seen[decl.name.value] = decl
            pipelines.extend(compile_pipeline(decl, policy, out, overrides or Budget()))
    return pipelines, out.items


def tiers_of(decl: ast.PipelineDecl, policy: PolicySource) -> list[str | None]:
    """A pipeline is compiled per tier when it declares tiers or reads ``tier`` in a guard."""
    if decl.tiers is not None:
        return [t.value for t in decl.tiers]
    if any(_mentions_tier(s.when) for s in decl.steps):
        return list(policy.policy.tiers)
    return [None]


def _mentions_tier(node: ast.ExprNode | None) -> bool:
    match node:
        case ast.Dotted(parts=("tier",)):
            return True
        case ast.BoolExpr(items=items):
            return any(_mentions_tier(i) for i in items)
        case ast.NotExpr(item=item):
            return _mentions_tier(item)
        case ast.CompareExpr(left=left, right=right):
            return _mentions_tier(left) or _mentions_tier(right)
        case ast.ContainsExpr(item=item, collection=coll):
            return _mentions_tier(item) or _mentions_tier(coll)
        case ast.MatchesExpr(subject=subject):
            return _mentions_tier(subject)
    return False


def compile_pipeline(
    decl: ast.PipelineDecl,
    policy: PolicySource,
    out: _Collector | None = None,
    overrides: Budget | None = None,
) -> list[Pipeline]:
    out = out or _Collector()
    _structure(decl, policy, out)
    pipeline_budget, budget_spans = _budget(decl, out)
    names = {s.name.value for s in decl.steps}
    resolver = GuardResolver(names, list(policy.policy.tiers), out)
    for tier_name in decl.tiers or ():
        if tier_name.value not in policy.policy.tiers:
            out.error(
                "LOOM215",
                f"tier {tier_name.value!r} is not defined by policy {policy.policy.name!r}",
                tier_name.span,
                did_you_mean(tier_name.value, policy.policy.tiers),
            )
    refs = [i.name for s in decl.steps for i in s.sees] + [n for s in decl.steps for n in s.after]
    refs += [*decl.answer, *(n for r in decl.requires for n in r.steps)]
    unknown_refs = any(n.value not in names for n in refs)
    result = []
    present: set[str] = set()  # steps that run in at least one variant
    bad_guards: set[str] = set()  # steps whose guard has an error (already reported)
    variants: list[str | None] = []
    for tier in tiers_of(decl, policy):
        if tier is not None and tier not in policy.policy.tiers:
            continue
        quiet = _Collector() if tier != tiers_of(decl, policy)[0] else out
        resolver.report = quiet
        steps = _steps(decl, policy, resolver, tier, quiet, bad_guards)
        present |= {s.id for s in steps}
        variants.append(tier)
        tier_budget = policy.policy.tiers[tier].budget() if tier else Budget()
        effective = pipeline_budget.tighten(tier_budget).tighten(overrides or Budget())
        defaults = policy.policy.defaults
        input_tokens = defaults.input_tokens
        if decl.input_tokens is not None:
            input_tokens = int(decl.input_tokens.value)
        result.append(
            Pipeline(
                name=decl.name.value,
                tier=tier,
                policy=policy.policy.name,
                instruction=decl.instruction.value if decl.instruction else "",
                graph=StepGraph({s.id: s for s in steps}),
                # unknown names are reported (LOOM208) and left out, so the checker does not
                # report their consequences a second time
                answer=tuple(n.value for n in decl.answer if n.value in names),
                budget=effective,
                pipeline_budget=pipeline_budget,
                tier_budget=tier_budget,
                requires=tuple(
                    Require(
                        r.kind.value, tuple(n.value for n in r.steps if n.value in names), r.span
                    )
                    for r in decl.requires
                ),
                input_tokens=input_tokens,
                backoff_base_ms=defaults.backoff_base,
                backoff_max_ms=defaults.backoff_max,
                source=decl.span.file,
                kind=_kind(decl),
                span=decl.span,
                budget_spans=budget_spans,
                unknown_refs=unknown_refs,
            )
        )
    if variants:
        _never_runs(decl, present, bad_guards, variants, out)
    return result


def _never_runs(
    decl: ast.PipelineDecl,
    present: set[str],
    bad_guards: set[str],
    variants: list[str | None],
    out: _Collector,
) -> None:
    """LOOM209: a guard that is statically false in every variant leaves a dead step."""
    seen: set[str] = set()
    for s in decl.steps:
        name = s.name.value
        if name in seen or s.when is None or name in present or name in bad_guards:
            seen.add(name)
            continue
        seen.add(name)
        tiers = [t for t in variants if t is not None]
        where = (
            f"false at every tier of pipeline {decl.name.value!r} ({', '.join(tiers)})"
            if tiers
            else f"always false in pipeline {decl.name.value!r}"
        )
        out.warn(
            "LOOM209",
            f"step {name!r} never runs: its guard is {where}",
            s.when.span,
            "fix the guard or remove the step",
        )


def _kind(decl: ast.PipelineDecl) -> str:
    if decl.kind is not None:
        return PIPELINE_KINDS.get(decl.kind.value, decl.kind.value)
    return PIPELINE_KINDS.get(decl.name.value, "general")


def _structure(decl: ast.PipelineDecl, policy: PolicySource, out: _Collector) -> None:
    for key, span in decl.duplicates:
        out.warn(
            "LOOM105",
            f"`{key}` is written twice in pipeline {decl.name.value!r}",
            span,
            "the first one counts; remove the other",
        )
    seen: dict[str, ast.StepDecl] = {}
    for step in decl.steps:
        if step.name.value in seen:
            out.error(
                "LOOM202",
                f"step {step.name.value!r} is defined twice in pipeline {decl.name.value!r}",
                step.name.span,
                f"the first definition is at line {seen[step.name.value].name.span.line}",
            )
        else:
            seen[step.name.value] = step
        for span in step.duplicates:
            out.warn(
                "LOOM105",
                f"a clause is written twice in step {step.name.value!r}",
                span,
                "the first one counts; remove the other",
            )
        if step.role.value not in ROLES:
            out.error(
                "LOOM205",
                f"unknown role {step.role.value!r}",
                step.role.span,
                did_you_mean(step.role.value, ROLES) or f"roles are {', '.join(ROLES)}",
            )
        workers = policy.policy.workers
        if step.worker.value not in workers:
            out.error(
                "LOOM204",
                f"unknown worker {step.worker.value!r} (policy {policy.policy.name!r})",
                step.worker.span,
                did_you_mean(step.worker.value, workers)
                or f"workers are {', '.join(sorted(workers))}",
            )
        refs = [(i.name, "sees") for i in step.sees] + [(n, "after") for n in step.after]
        for ref, clause in refs:
            if ref.value == step.name.value:
                out.error("LOOM216", f"step {ref.value!r} `{clause}` itself", ref.span)
            elif ref.value not in {s.name.value for s in decl.steps}:
                out.error(
                    "LOOM203",
                    f"`{clause}` names unknown step {ref.value!r}",
                    ref.span,
                    did_you_mean(ref.value, [s.name.value for s in decl.steps]),
                )
    names = [s.name.value for s in decl.steps]
    if not decl.answer:
        out.error(
            "LOOM208",
            f"pipeline {decl.name.value!r} has no `answer` chain",
            decl.name.span,
            f"add `answer {names[-1] if names else 'STEP'}`",
        )
    for ref in decl.answer:
        if ref.value not in names:
            out.error(
                "LOOM208",
                f"answer names unknown step {ref.value!r}",
                ref.span,
                did_you_mean(ref.value, names),
            )
    for req in decl.requires:
        if req.kind.value != "independent":
            out.error(
                "LOOM502",
                f"unknown invariant {req.kind.value!r}",
                req.kind.span,
                "supported: independent(a, b, ...)",
            )
        for ref in req.steps:
            if ref.value not in names:
                out.error(
                    "LOOM203",
                    f"require names unknown step {ref.value!r}",
                    ref.span,
                    did_you_mean(ref.value, names),
                )


_LIMIT_UNITS: dict[str, tuple[Dimension, tuple[str | None, ...]]] = {
    "calls": (Dimension.CALLS, (None, "calls")),
    "tokens": (Dimension.TOKENS, (None, "tokens")),
    "credits": (Dimension.CREDITS, (None, "credits")),
    "cost": (Dimension.COST, ("usd",)),
    "latency": (Dimension.LATENCY, ("ms",)),
}
_UNIT_TEXT = {
    None: "a bare number",
    "calls": "calls",
    "tokens": "tokens",
    "credits": "credits",
    "usd": "dollars",
    "ms": "a duration",
}


def _budget(decl: ast.PipelineDecl, out: _Collector) -> tuple[Budget, dict[str, Span]]:
    budget = Budget()
    spans: dict[str, Span] = {}
    for limit in decl.limits:
        dim_name = limit.dimension.value
        if dim_name not in _LIMIT_UNITS:
            out.error(
                "LOOM413",
                f"unknown budget dimension {dim_name!r}",
                limit.dimension.span,
                did_you_mean(dim_name, _LIMIT_UNITS) or "use calls, tokens, credits, cost, latency",
            )
            continue
        dim, units = _LIMIT_UNITS[dim_name]
        q = limit.quantity
        if q.unit not in units:
            example = {"cost": "$0.08", "latency": "60s"}.get(dim_name, f"{dim_name} <= 3")
            out.error(
                "LOOM410",
                f"`{dim_name}` is measured in {_UNIT_TEXT[units[-1]]}, not {_UNIT_TEXT[q.unit]} "
                f"({q.text})",
                q.span,
                f"write e.g. `{dim_name} <= {example}`"
                if dim_name in ("cost", "latency")
                else f"write `{dim_name} <= N`",
            )
            continue
        if dim_name in spans:
            out.warn(
                "LOOM105", f"`{dim_name}` is limited twice; the tighter ceiling counts", limit.span
            )
        value: int | Decimal
        if dim in (Dimension.CREDITS, Dimension.COST):
            value = q.value
        else:
            if q.value != q.value.to_integral_value():
                out.error("LOOM414", f"`{dim_name}` must be a whole number ({q.text})", q.span)
                continue
            value = int(q.value)
        current = budget.get(dim)
        budget = budget.with_value(dim, value if current is None else min(current, value))
        spans[dim.value] = limit.span
    return budget, spans


def _steps(
    decl: ast.PipelineDecl,
    policy: PolicySource,
    resolver: GuardResolver,
    tier: str | None,
    out: _Collector,
    bad_guards: set[str],
) -> list[StepNode]:
    pol = policy.policy
    names = {s.name.value for s in decl.steps}
    steps: list[StepNode] = []
    seen: set[str] = set()
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
        if (
            worker is not None
            and provider_cfg is None
            and s.worker.value not in {st.worker for st in steps}
        ):
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


def _whole(q: ast.Quantity | None, what: str, out: _Collector, *, allow_zero: bool) -> int | None:
    if q is None:
        return None
    if q.unit not in (None, "tokens"):
        out.error(
            "LOOM410", f"`{what}` takes a whole number, not {_UNIT_TEXT[q.unit]} ({q.text})", q.span
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


def _duration(q: ast.Quantity | None, out: _Collector) -> int | None:
    if q is None:
        return None
    if q.unit != "ms":
        out.error(
            "LOOM410",
            f"`timeout` is a duration, not {_UNIT_TEXT[q.unit]} ({q.text})",
            q.span,
            "write e.g. `timeout 20s`",
        )
        return None
    if q.value <= 0:
        out.error("LOOM414", f"`timeout` must be positive ({q.text})", q.span)
        return None
    return int(q.value)
