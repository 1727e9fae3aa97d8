"""A plan as a pipeline: the `.loom` source a plan compiles to, and the receipts the IR proves.

Split from `loomc.conductor.guard` (which decides what runs) because this is the guard's
mechanics: gate 2 (`compile_plan`: the plan becomes `.loom` source — steps `writer` →
`reviewer` → `finalizer`, each `sees` exactly the plan's access list — compiled against the
policy with the hard limits as its ceilings) and gate 4 (`receipts`: each declared figure
against what the compiled IR recomputes).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from loomc.conductor.mapping import HardLimits
from loomc.conductor.plan import ROLES, Plan, TaskProfile, WorkerProfile, default_access
from loomc.diagnostics import Diagnostic
from loomc.ir.compile import compile_modules
from loomc.ir.model import Pipeline
from loomc.policy.load import PolicySource
from loomc.syntax.parser import parse_text

CREDIT_TOLERANCE = Decimal("0.001")
SOURCE_NAME = "<conductor-plan>"
CEILING_REASONS = {
    "LOOM401": "over_budget:calls",
    "LOOM402": "over_budget:tokens",
    "LOOM403": "over_budget:credits",
    "LOOM404": "over_budget:cost",
    "LOOM405": "over_budget:latency",
}
STEP_ROLES = {"writer": "writer", "finalizer": "finalizer"}  # reviewer: editor or critic
STEP_TASKS = {
    "writer": "Answer the task directly and completely.",
    "editor": "Audit the draft for errors and omissions, then return the complete corrected "
    "answer.",
    "critic": "Audit the draft adversarially: list every error, risk and missing case.",
    "finalizer": "Write the final answer, fixing every issue the critique raised.",
}
DEFAULT_INSTRUCTION = "Answer the user's task accurately and concisely. Say what you are unsure of."


@dataclass(frozen=True)
class GuardContext:
    """What a plan is checked against: the policy, the roster, the task and the hard limits."""

    policy: PolicySource
    workers: tuple[WorkerProfile, ...]
    task: TaskProfile
    limits: HardLimits
    name: str = "conductor"
    instruction: str = DEFAULT_INSTRUCTION
    kind: str = "general"
    input_tokens: int | None = None  # None: the policy default
    # the prompt cues behind each task number (`loomc.conductor.estimate`), for receipts
    drivers: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def worker_ids(self) -> list[str]:
        return [w.id for w in self.workers]


def _quote(text: str) -> str:
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", " ")
    return f'"{body}"'


def plan_source(plan: Plan, context: GuardContext) -> str:
    """The plan as a `.loom` pipeline (no budget block: the ceilings come as overrides)."""
    access = plan.access or default_access(plan.reviewer, plan.finalizer)
    lines = [f"pipeline {context.name} {{", f"  instruction {_quote(context.instruction)}"]
    lines.append(f"  kind {context.kind}")
    if context.input_tokens is not None:
        lines.append(f"  input_tokens {int(context.input_tokens)}")
    present = []
    for role, worker in zip(ROLES, (plan.writer, plan.reviewer, plan.finalizer), strict=True):
        if worker is None:
            continue
        present.append(role)
        step_role = STEP_ROLES.get(role) or ("critic" if plan.finalizer is not None else "editor")
        sees = ", ".join(access.get(role, ()))
        clause = f" sees {sees}" if sees else ""
        lines.append(f"  step {role} : {step_role}({worker}){clause} {{")
        lines.append(f"    task {_quote(STEP_TASKS[step_role])}")
        lines.append("  }")
    lines.append("  answer " + " | ".join(reversed(present)))
    lines.append("}")
    return "\n".join(lines) + "\n"


def compile_plan(plan: Plan, context: GuardContext) -> tuple[Pipeline | None, list[Diagnostic]]:
    """Compile a plan with the real parser and compiler; the hard limits are its ceilings."""
    module, diags = parse_text(plan_source(plan, context), SOURCE_NAME)
    if module is None:
        return None, diags
    pipelines, comp = compile_modules([module], context.policy, context.limits.budget)
    diags = [*diags, *comp]
    if not pipelines or any(d.is_error for d in diags):
        return None, diags
    return replace(pipelines[0], tier=f"conductor-{plan.policy}"), diags


def _declared(value: float) -> Decimal:
    return Decimal(repr(float(value)))


def receipts(plan: Plan, pipeline: Pipeline, context: GuardContext) -> list[tuple[str, Any, Any]]:
    """(field, declared, recomputed) for each declared receipt the IR contradicts."""
    graph = pipeline.graph
    steps = {s.id: s for s in graph.steps()}
    credits = sum((s.credits for s in steps.values()), Decimal(0))
    latency, _ = graph.longest_path(_p95(pipeline))
    independent = "reviewer" in steps and steps["reviewer"].group != steps["writer"].group
    constraints = context.limits.constraints
    canonical = default_access(plan.reviewer, plan.finalizer)
    declared_access = {r: tuple(plan.access.get(r, ())) for r in ROLES}
    bad: list[tuple[str, Any, Any]] = []
    if plan.max_calls != len(steps):
        bad.append(("max_calls", plan.max_calls, len(steps)))
    if abs(_declared(plan.estimated_credits) - credits) > CREDIT_TOLERANCE:
        bad.append(("estimated_credits", plan.estimated_credits, str(credits)))
    if plan.estimated_latency_ms != latency:
        bad.append(("estimated_latency_ms", plan.estimated_latency_ms, latency))
    if plan.independent_verification != independent:
        bad.append(("independent_verification", plan.independent_verification, independent))
    if declared_access != canonical:
        bad.append(("access", declared_access, canonical))
    if abs(_declared(plan.max_credits) - _declared(constraints.max_credits)) > CREDIT_TOLERANCE:
        bad.append(("max_credits", plan.max_credits, constraints.max_credits))
    if plan.max_latency_ms != constraints.max_latency_ms:
        bad.append(("max_latency_ms", plan.max_latency_ms, constraints.max_latency_ms))
    return bad


def _p95(pipeline: Pipeline) -> dict[str, int]:
    """Per-step p95 latency (the timeout where the policy gives no p95, as the mapping does)."""
    return {
        s.id: s.p95_ms if s.p95_ms is not None else s.timeout_ms for s in pipeline.graph.steps()
    }
