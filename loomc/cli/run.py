"""`loomc run PROMPT`: execute one pipeline x tier with a live trace and a receipt."""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal
from pathlib import Path

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
    name = "baseline" if args.baseline else "fixed" if args.fixed else args.pipeline
    tier = None if (args.baseline or args.fixed) else (args.tier or "balanced")
    try:
        project = load_project(args.project, args.policy)
        if args.credit_per_call is not None:
            _override_credits(project, args.credit_per_call)
        overrides = Budget(
            calls=args.max_calls, credits=args.max_credits, latency_ms=args.max_latency_ms
        )
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
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        print(result.answer)
        used = result.budget.used
        print(
            f"\n{result.pipeline}{'@' + result.tier if result.tier else ''}: {result.calls} call(s), "
            f"{result.tokens} tokens, {result.elapsed_ms} ms, stop: {result.stop_reason}"
            + (f", escalated: {result.escalation_reason}" if result.escalated else "")
            + f", credits ~{used.get('credits')}, receipt {result.receipt_hash}",
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
