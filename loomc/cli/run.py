"""`loomc run PROMPT`: execute one pipeline x tier with a live trace and a receipt."""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from loomc.cli.common import _decimal


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run a pipeline on a prompt (argument or stdin)")
    p.add_argument("prompt", nargs="?", help="the task; read from stdin when omitted or '-'")
    p.add_argument("--pipeline", default="general")
    p.add_argument("--tier", choices=("lean", "balanced", "strict"), default=None)
    p.add_argument("--baseline", action="store_true", help="run the baseline strategy")
    p.add_argument("--fixed", action="store_true", help="run the fixed 4-step strategy")
    p.add_argument("--max-calls", type=int, metavar="N")
    p.add_argument("--max-credits", type=_decimal, metavar="X")
    p.add_argument("--max-latency-ms", type=int, metavar="N")
    p.add_argument(
        "--credit-per-call",
        type=_decimal,
        metavar="X",
        help="credit reservation estimate per call (overrides the policy's)",
    )
    p.add_argument("--no-stream", action="store_true")
    p.add_argument("--json", action="store_true", help="print the run result as one JSON object")
    p.add_argument("--policy", type=Path)
    p.add_argument("--project", type=Path, default=Path("."))
    p.add_argument("--trace", type=Path, help="append events as JSONL")
    c = p.add_argument_group("conductor", "plan the run with a planner; the checker guards it")
    c.add_argument(
        "--planner",
        choices=("learned", "search", "risk"),
        default=None,
        help="propose a plan (policy, roles, access) instead of running the pipeline's tiers",
    )
    c.add_argument("--workers", metavar="A,B,C", help="policy workers a plan may use")
    c.add_argument("--base-model", metavar="DIR", help="learned planner: base causal LM")
    c.add_argument("--adapter", metavar="DIR", help="learned planner: PEFT adapter")
    c.add_argument("--revision", help="learned planner: model revision")
    c.add_argument("--device", help="learned planner: device (auto, cpu, cuda, ...)")
    c.add_argument("--dtype", help="learned planner: dtype (auto, bfloat16, float32, ...)")
    c.add_argument("--max-new-tokens", type=int, metavar="N", help="learned planner: decode cap")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from loomc.check.render import render_text
    from loomc.diagnostics import DiagnosticError
    from loomc.exec.events import EventSink, JsonlSink
    from loomc.exec.executor import execute
    from loomc.exec.live import LiveTrace
    from loomc.project import load_project
    from loomc.providers.registry import ProviderPool
    from loomc.risk.factory import make_profiler
    from loomc.units import Budget

    prompt = args.prompt
    if prompt is None or prompt == "-":
        prompt = sys.stdin.read()
    if not prompt or not prompt.strip():
        print("loomc run: no prompt (give it as an argument or on stdin)", file=sys.stderr)
        return 2
    if args.baseline and args.fixed:
        print("loomc run: --baseline and --fixed exclude each other", file=sys.stderr)
        return 2
    planner = getattr(args, "planner", None)
    if planner is not None and (args.baseline or args.fixed):
        print("loomc run: --planner plans its own steps; drop --baseline/--fixed", file=sys.stderr)
        return 2
    if planner == "learned" and not args.base_model:
        print("loomc run: --planner learned needs --base-model DIR", file=sys.stderr)
        return 2
    name = "baseline" if args.baseline else "fixed" if args.fixed else args.pipeline
    tier = None if (args.baseline or args.fixed) else (args.tier or "balanced")
    try:
        project = load_project(args.project, args.policy)
        if args.credit_per_call is not None:
            _override_credits(project, args.credit_per_call)
        overrides = Budget(
            calls=args.max_calls, credits=args.max_credits, latency_ms=args.max_latency_ms
        )
        if planner is not None:
            tier = args.tier or _widest_tier(project)
            pipeline = _planning_base(project, name, tier, overrides)
        else:
            pipeline = project.compile(name, tier, overrides)
    except DiagnosticError as exc:
        print(render_text(exc.diagnostics), file=sys.stderr)
        print(f"loomc run: {len(exc.diagnostics)} error(s); no model was called", file=sys.stderr)
        return 1
    profiler = make_profiler(project.policy.risk)
    notice = getattr(profiler, "notice", None)
    if notice:
        print(f"loomc: {notice}", file=sys.stderr)
    sinks: list[EventSink] = []
    if not args.json:
        sinks.append(LiveTrace(tokens=not args.no_stream))
    if args.trace:
        sinks.append(JsonlSink(args.trace))
    conductor: dict[str, object] | None = None
    if planner is not None:
        from loomc.conductor.guard import GuardError, conduct

        try:
            decision = conduct(
                project.policy_source,
                pipeline,
                prompt,
                profiler,
                planner,
                **_planner_options(args),
            )
        except (GuardError, ValueError) as exc:
            record = exc.record if isinstance(exc, GuardError) else {"error": str(exc)}
            if args.json:
                print(json.dumps({"conductor": record}, indent=2, default=str))
            print(f"loomc run: {exc}; no model was called", file=sys.stderr)
            return 1
        pipeline = decision.pipeline
        conductor = decision.to_json()
        _trace_conductor(args.trace, conductor)
        if not args.json:
            verdict = (
                "accepted"
                if decision.accepted
                else f"rejected ({', '.join(decision.reasons)}"
                + (f": {'; '.join(decision.details)}" if decision.details else "")
                + f"); fallback {decision.fallback}"
            )
            plan = decision.plan
            print(
                f"loomc: planner {planner}: proposal {verdict}; running {plan.policy} "
                f"{' -> '.join(plan.roles)}",
                file=sys.stderr,
            )

    async def main() -> object:
        async with ProviderPool(project.policy) as pool:
            return await execute(
                pipeline,
                prompt,
                pool=pool,
                sinks=sinks,
                profiler=profiler,
                stream=not args.no_stream,
            )

    result = anyio.run(main)
    from loomc.exec.result import RunResult

    assert isinstance(result, RunResult)
    if args.json:
        out = result.model_dump(mode="json")
        if conductor is not None:
            out["conductor"] = conductor
        print(json.dumps(out, indent=2))
    else:
        print(result.answer)
        used = result.budget.used
        print(
            f"\n{result.pipeline}{'@' + result.tier if result.tier else ''}: {result.calls} call(s), "
            f"{result.tokens} tokens, {result.elapsed_ms} ms, stop: {result.stop_reason}"
            + (f", escalated: {result.escalation_reason}" if result.escalated else "")
            + f", credits ~{used.credits}, receipt {result.receipt_hash}",
            file=sys.stderr,
        )
    if result.stop_reason == "error":
        print(f"loomc run: {result.error}", file=sys.stderr)
        return 1
    return 0


def _override_credits(project: object, per_call: Decimal) -> None:
    from loomc.project import Project

    assert isinstance(project, Project)
    pol = project.policy
    workers = {k: w.model_copy(update={"credits": per_call}) for k, w in pol.workers.items()}
    project.policy_source.policy = pol.model_copy(update={"workers": workers})


def _widest_tier(project: object) -> str | None:
    """Without --tier a planner may use the most calls any tier allows (it picks the depth)."""
    import math

    from loomc.project import Project

    assert isinstance(project, Project)
    tiers = project.policy.tiers
    if not tiers:
        return None

    def calls(name: str) -> float:
        ceiling = tiers[name].calls
        return math.inf if ceiling is None else float(ceiling)

    return max(tiers, key=calls)


def _planning_base(project: object, name: str, tier: str | None, overrides: object) -> Any:
    """The pipeline x tier a plan takes its ceilings, instruction and kind from. Its own steps
    never run, so only compile errors count: its tier may well exceed the command-line ceilings
    that the plan will fit."""
    from loomc.project import Project
    from loomc.units import Budget

    assert isinstance(project, Project) and isinstance(overrides, Budget)
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


def _planner_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "workers": [w.strip() for w in args.workers.split(",") if w.strip()]
        if args.workers
        else None,
        "base_model": args.base_model,
        "adapter": args.adapter,
        "revision": args.revision,
        "device": args.device,
        "dtype": args.dtype,
        "max_new_tokens": args.max_new_tokens,
    }


def _trace_conductor(path: Path | None, record: dict[str, object]) -> None:
    """The planner's verdict as the trace's first line (same shape as an executor event)."""
    if path is None:
        return
    import time

    from loomc.providers.base import redact

    line: dict[str, object] = {
        "kind": "conductor-plan",
        "run_id": None,
        "step": None,
        "ts": round(time.time(), 6),
        "data": record,
    }
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(redact(json.dumps(line, default=str)) + "\n")
    except OSError as exc:
        print(f"loomc: trace file {path} not writable: {exc.strerror}", file=sys.stderr)
