"""``loomc.run`` / ``loomc.arun``: one prompt through one pipeline x tier, or through a planner.

This is the one driver behind ``loomc run``, the server and the Studio: load (or reuse) a
:class:`~loomc.project.Project`, compile the pipeline x tier under the caller's ceilings, let a
planner replace the plan when asked (the checker guards it), and execute with the caller's
providers, sinks and profiler. Nothing here prints: callers render the result.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from loomc.api.profiling import AUTO_TIER, auto_tier, policy_profiler, profiler_for
from loomc.api.tracing import StoreLike, TraceRecorder, Traces, stored_run
from loomc.errors import LoomcError
from loomc.exec.events import Event, EventSink
from loomc.exec.result import RunResult
from loomc.frozen import replace
from loomc.ir.model import Pipeline
from loomc.project import Project, load_project
from loomc.providers.base import Provider
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfiler
from loomc.store.otel import OtelExporter
from loomc.units import Budget

if TYPE_CHECKING:
    from loomc.conductor.guard import Decision

ProjectLike = Project | str | Path
Providers = ProviderPool | Mapping[str, Provider]

DEFAULT_PIPELINE = "general"
DEFAULT_TIER = "balanced"


def open_project(project: ProjectLike = ".", policy: str | Path | None = None) -> Project:
    """A loaded project, or load one from a folder (raises ``DiagnosticError``)."""
    if isinstance(project, Project):
        if policy is not None:
            raise ValueError("policy= applies when loading a project, not to a loaded Project")
        return project
    return load_project(project, policy)


def default_tier(project: Project) -> str:
    """The policy's ``default_tier``, else ``balanced`` when declared, else its first tier."""
    if project.policy.default_tier is not None:
        return project.policy.default_tier
    tiers = project.tiers()
    return DEFAULT_TIER if DEFAULT_TIER in tiers else tiers[0]


def with_credit_per_call(project: Project, per_call: Decimal) -> None:
    """Override every worker's credit reservation estimate (``--credit-per-call``)."""
    pol = project.policy
    workers = {k: w.model_copy(update={"credits": per_call}) for k, w in pol.workers.items()}
    project.replace_policy(pol.model_copy(update={"workers": workers}))


async def arun(
    prompt: str,
    *,
    project: ProjectLike = ".",
    policy: str | Path | None = None,
    pipeline: str | Pipeline = DEFAULT_PIPELINE,
    tier: str | None = None,
    ceilings: Budget | None = None,
    planner: str | Any | None = None,
    planner_options: Mapping[str, Any] | None = None,
    providers: Providers | None = None,
    sinks: Sequence[EventSink] = (),
    profiler: RiskProfiler | None = None,
    stream: bool = True,
    temperature: float | None = None,
    store: StoreLike | Traces | None = None,
    telemetry: OtelExporter | None = None,
) -> RunResult:
    """Run ``prompt`` through ``pipeline`` at ``tier`` and return the typed result.

    ``tier`` defaults to ``balanced`` (or the policy's first tier); pipelines without tiers
    (``baseline``, ``fixed``) ignore it; ``"auto"`` lets the risk profile pick the pipeline's
    tier, as ``loomc serve``'s ``auto`` model does (low: its first, high: its last). ``ceilings`` are run-time *limits*, not promises: the
    run is admitted even when the checker's worst case exceeds them (that is reported on
    ``result.warnings`` and as ``warning`` events), each step is reserved against the tightest
    of them and the pipeline's proved budget, and the run stops ``budget-limited`` before a step
    that would not fit (``result.limited_by`` says which ceiling, needed and left); the latency
    limit is a deadline that cancels the call in flight. ``temperature`` replaces every worker's.
    ``planner`` (``"risk"``, ``"search"``, ``"learned"`` or a planner object) proposes the plan
    instead; the checker guards it and a rejected plan falls back to the risk plan. The planner's
    decision is on ``result.conductor`` and emitted as a ``conductor-plan`` event first.
    ``providers`` replaces or extends the policy's providers (a pool you manage, or ready
    providers by policy name); ``sinks`` receive every event; ``profiler`` overrides the policy's.

    ``pipeline`` may also be a :class:`~loomc.Pipeline` from ``Project.compile`` (then ``tier``
    is its own): a caller running one pipeline x tier many times compiles and checks it once.

    Raises ``DiagnosticError`` when the pipeline does not compile or check (no model is called)
    and ``PlanRejected`` when a planner's proposal and its fallback both fail the checker.
    """
    proj = open_project(project, policy)
    if not prompt or not prompt.strip():
        raise ValueError("empty prompt")
    if temperature is not None and not 0 <= temperature <= 2:
        raise ValueError(f"temperature must be between 0 and 2, not {temperature}")
    limits = ceilings or Budget()
    if tier == AUTO_TIER and isinstance(pipeline, str) and planner is None:
        tier, profiler = await auto_tier(proj, pipeline, prompt, profiler)
    chosen_tier = tier or default_tier(proj)
    # opened before anything runs: a store that cannot be opened refuses the run, unpaid
    traces = store if isinstance(store, Traces) else Traces(store, telemetry)
    try:
        result = await _run_traced(
            proj, prompt, pipeline, tier, chosen_tier, limits, planner, planner_options,
            providers, sinks, profiler, stream, temperature, traces,
        )  # fmt: skip
    finally:
        if traces is not store:
            await traces.aclose()
    return result


async def _run_traced(
    proj: Project,
    prompt: str,
    pipeline: str | Pipeline,
    tier: str | None,
    chosen_tier: str,
    limits: Budget,
    planner: str | Any | None,
    planner_options: Mapping[str, Any] | None,
    providers: Providers | None,
    sinks: Sequence[EventSink],
    profiler: RiskProfiler | None,
    stream: bool,
    temperature: float | None,
    traces: Traces,
) -> RunResult:
    recorder = TraceRecorder()
    if traces:
        sinks = [*sinks, recorder]
    started = time.time()
    decision: Decision | None = None
    if isinstance(pipeline, Pipeline):
        if planner is not None:
            raise ValueError("a planner plans from a pipeline name, not a compiled Pipeline")
        compiled = pipeline  # compiled and checked by the caller (a server caches them)
    elif planner is None:
        compiled = proj.compile(pipeline, chosen_tier)  # the promise: proved as in `loomc check`
    else:
        # A planner fits its plan into the limits (they choose its depth); the guard proves it.
        base = planning_base(proj, pipeline, tier or widest_tier(proj), limits)
        risk = profiler or policy_profiler(proj.policy.risk)
        decision = plan_run(proj, base, prompt, risk, planner, planner_options or {})
        compiled = decision.pipeline
        event = Event("conductor-plan", "", None, decision.to_json())  # type: ignore[arg-type]
        for sink in sinks:
            await sink.emit(event)
    if compiled.limits != limits:  # loomc.frozen's replace: no dataclass twin to build
        compiled = replace(compiled, limits=limits)
    # else the caller's own pipeline: the executor's prepared part of it (keyed by the object)
    # is then found, not worked out again each run (~4 % of a streamed run)
    if decision is None:
        risk = profiler_for(compiled, proj.policy.risk, profiler)
    result = await _execute(proj, compiled, prompt, providers, sinks, risk, stream, temperature)
    if decision is not None:
        result.conductor = decision.to_json()
    if traces:
        extra = {"conductor": result.conductor} if result.conductor is not None else None
        await traces.add(
            stored_run(result, recorder.events, source="run", started=started, extra=extra)
        )
    return result


def run(prompt: str, **options: Any) -> RunResult:
    """Blocking :func:`arun` (same arguments); starts its own event loop."""

    async def main() -> RunResult:
        return await arun(prompt, **options)

    return anyio.run(main)


async def _execute(
    project: Project,
    pipeline: Pipeline,
    prompt: str,
    providers: Providers | None,
    sinks: Sequence[EventSink],
    profiler: RiskProfiler,
    stream: bool,
    temperature: float | None,
) -> RunResult:
    from loomc.exec.executor import execute

    options: dict[str, Any] = {
        "sinks": sinks,
        "profiler": profiler,
        "stream": stream,
        "temperature": temperature,
    }
    if isinstance(providers, ProviderPool):
        return await execute(pipeline, prompt, pool=providers, **options)
    async with ProviderPool(project.policy) as pool:
        for name, provider in (providers or {}).items():
            pool.put(name, provider)
        return await execute(pipeline, prompt, pool=pool, **options)


class PlanRejected(LoomcError, RuntimeError):
    """Neither the planner's proposal nor the fallback plan passed the checker (or the roster
    is unusable): nothing ran. ``record`` is the guard's verdict, for reports."""

    def __init__(self, message: str, record: dict[str, Any]) -> None:
        super().__init__(message)
        self.record = record


def plan_run(
    project: Project,
    base: Pipeline,
    prompt: str,
    profiler: RiskProfiler,
    planner: str | Any,
    options: Mapping[str, Any],
) -> Decision:
    """Ask the planner for a plan and guard it; raises ``PlanRejected`` when nothing passes."""
    from loomc.conductor.guard import GuardError, conduct
    from loomc.conductor.planners import PlannerUnavailable

    name = planner if isinstance(planner, str) else type(planner).__name__
    proposer = None if isinstance(planner, str) else planner
    opts = dict(options)
    try:
        return conduct(
            project.policy_source, base, prompt, profiler, name, proposer=proposer, **opts
        )
    except GuardError as exc:
        raise PlanRejected(str(exc), exc.record) from exc
    except PlannerUnavailable as exc:
        message = f"{exc} (pass --allow-planner-fallback to plan with the risk planner instead)"
        raise PlanRejected(
            message, {"planner": name, "reasons": ["planner_unavailable"], "error": str(exc)}
        ) from exc
    except ValueError as exc:
        raise PlanRejected(str(exc), {"error": str(exc)}) from exc


def widest_tier(project: Project) -> str | None:
    """Without a tier a planner may use the most calls any tier allows (it picks the depth)."""
    tiers = project.policy.tiers

    def calls(name: str) -> float:
        ceiling = tiers[name].calls
        return math.inf if ceiling is None else float(ceiling)

    return max(tiers, key=calls) if tiers else None


def planning_base(project: Project, name: str, tier: str | None, overrides: Budget) -> Pipeline:
    """The pipeline x tier a plan takes its ceilings, instruction and kind from. Its own steps
    never run, so only compile errors count: its tier may well exceed the ceilings that the
    plan will fit."""
    compiled, diags = project.pipelines(overrides)
    named = [p for p in compiled if p.name == name]
    match = next((p for p in named if p.tier == tier), None)
    match = match or next((p for p in named if p.tier is None), None)
    if match is None:
        return project.compile(name, tier, overrides)  # raises the usual diagnostics
    files = (match.source, project.policy_source.path)
    if any(d.is_error and d.span.file in files for d in project.diagnostics + diags):
        return project.compile(name, tier, overrides)
    return match
