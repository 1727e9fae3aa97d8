"""Compile AST + policy into one IR `Pipeline` per pipeline x tier.

Name resolution errors are collected, not raised; a pipeline with errors still compiles as far as
it can so the checker reports everything at once. Static guards (the tier) are folded here, so
a step whose guard is false in a tier is simply absent from that tier's graph.
"""

from __future__ import annotations

from collections.abc import Iterable

from loomc.diagnostics import Diagnostic
from loomc.ir.budgets import pipeline_budget, unpriced
from loomc.ir.collector import Collector
from loomc.ir.graph import StepGraph
from loomc.ir.guards import GuardResolver
from loomc.ir.model import Pipeline, Require
from loomc.ir.steps import build_steps
from loomc.ir.structure import ROLES, check_structure
from loomc.policy.load import PolicySource
from loomc.syntax import ast
from loomc.text import did_you_mean
from loomc.units import Budget

PIPELINE_KINDS = {
    "code-review": "code-review",
    "code_review": "code-review",
    "research": "research",
}


def compile_modules(
    modules: Iterable[ast.Module], policy: PolicySource, overrides: Budget | None = None
) -> tuple[list[Pipeline], list[Diagnostic]]:
    """Every pipeline of every module, for every tier it is compiled for."""
    out = Collector()
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
    out: Collector | None = None,
    overrides: Budget | None = None,
) -> list[Pipeline]:
    out = out or Collector()
    check_structure(decl, policy, out)
    declared_budget, budget_spans = pipeline_budget(decl, out)
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
    tiers = tiers_of(decl, policy)
    for tier in tiers:
        if tier is not None and tier not in policy.policy.tiers:
            continue
        quiet = Collector() if tier != tiers[0] else out
        resolver.report = quiet
        steps = build_steps(decl, policy, resolver, tier, quiet, bad_guards)
        present |= {s.id for s in steps}
        variants.append(tier)
        tier_budget = policy.policy.tiers[tier].budget() if tier else Budget()
        effective = declared_budget.tighten(tier_budget).tighten(overrides or Budget())
        effective = unpriced(effective, policy, overrides)
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
                pipeline_budget=declared_budget,
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
    out: Collector,
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


__all__ = ["ROLES", "compile_modules", "compile_pipeline", "tiers_of"]
