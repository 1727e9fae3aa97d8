"""The name-level checks of one pipeline declaration, before any tier is compiled: duplicate
steps and clauses, unknown roles, workers, steps, answer chains and invariants."""

from __future__ import annotations

from loomc.ir.collector import Collector
from loomc.policy.load import PolicySource
from loomc.syntax import ast
from loomc.text import did_you_mean

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


def check_structure(decl: ast.PipelineDecl, policy: PolicySource, out: Collector) -> None:
    """Names that do not resolve, clauses written twice, roles and workers that do not exist.

    Linear in the number of steps and references: the step names are collected once (a set
    per reference made compiling 2,000 steps quadratic)."""
    step_names = [s.name.value for s in decl.steps]
    known = set(step_names)
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
            elif ref.value not in known:
                out.error(
                    "LOOM203",
                    f"`{clause}` names unknown step {ref.value!r}",
                    ref.span,
                    did_you_mean(ref.value, step_names),
                )
    names = step_names
    if not decl.answer:
        out.error(
            "LOOM208",
            f"pipeline {decl.name.value!r} has no `answer` chain",
            decl.name.span,
            f"add `answer {names[-1] if names else 'STEP'}`",
        )
    for ref in decl.answer:
        if ref.value not in known:
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
            if ref.value not in known:
                out.error(
                    "LOOM203",
                    f"require names unknown step {ref.value!r}",
                    ref.span,
                    did_you_mean(ref.value, names),
                )
