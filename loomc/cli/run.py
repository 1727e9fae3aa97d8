"""`loomc run PROMPT`: execute one pipeline x tier with a live trace and a receipt."""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loomc.cli.planner_flags import add_planner_flags, planner_options, planner_problem
from loomc.cli.reference import add_reference_flags, resolve
from loomc.cli.terminal import plain
from loomc.cli.tracing import add_trace_flags, trace_options
from loomc.conductor import PLANNER_NAMES

if TYPE_CHECKING:
    from loomc.exec.result import RunResult


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run a pipeline on a prompt (argument or stdin)")
    p.add_argument("prompt", nargs="?", help="the task; read from stdin when omitted or '-'")
    p.add_argument("--pipeline", default="general")
    p.add_argument(
        "--tier",
        default=None,
        help="a tier the policy declares, or auto: the risk profile picks (default: balanced)",
    )
    p.add_argument("--baseline", action="store_true", help="run the baseline strategy")
    p.add_argument("--fixed", action="store_true", help="run the fixed 4-step strategy")
    g = p.add_argument_group(
        "limits",
        "run-time ceilings: the run is admitted, stops budget-limited before a step that would "
        "not fit, and the checker's worst case above a limit is a warning (`loomc check` "
        "proves ceilings instead)",
    )
    g.add_argument("--max-calls", type=_count, metavar="N")
    g.add_argument("--max-tokens-total", type=_count, metavar="N", dest="max_tokens_total")
    g.add_argument("--max-credits", type=_amount, metavar="X")
    g.add_argument("--max-cost", type=_amount, metavar="USD")
    g.add_argument("--max-latency-ms", type=_count, metavar="N", help="a deadline for the run")
    p.add_argument(
        "--temperature", type=_temperature, metavar="T", help="sampling temperature, 0-2"
    )
    p.add_argument(
        "--credit-per-call",
        type=_amount,
        metavar="X",
        help="credit reservation estimate per call (overrides the policy's)",
    )
    p.add_argument("--no-stream", action="store_true")
    p.add_argument("--json", action="store_true", help="print the run result as one JSON object")
    p.add_argument("--policy", type=Path)
    add_reference_flags(p)
    p.add_argument("--project", type=Path, default=Path("."))
    p.add_argument("--trace", type=Path, help="append events as JSONL")
    add_trace_flags(p)
    c = p.add_argument_group("conductor", "plan the run with a planner; the checker guards it")
    c.add_argument(
        "--planner",
        choices=PLANNER_NAMES,
        default=None,
        help="propose a plan (policy, roles, access) instead of running the pipeline's tiers",
    )
    add_planner_flags(c)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import loomc
    from loomc.api.running import with_credit_per_call
    from loomc.checker.render import MAX_SHOWN, render_json, render_text
    from loomc.cli.live import LiveTrace
    from loomc.exec.events import EventSink, JsonlSink

    clash = resolve(args, "run")
    if clash:
        print(f"loomc run: {clash}", file=sys.stderr)
        return 2
    prompt = args.prompt
    if prompt is None or prompt == "-":
        prompt = sys.stdin.read()
    if not prompt or not prompt.strip():
        print("loomc run: no prompt (give it as an argument or on stdin)", file=sys.stderr)
        return 2
    if args.baseline and args.fixed:
        print("loomc run: --baseline and --fixed exclude each other", file=sys.stderr)
        return 2
    planner = args.planner
    if planner is not None and (args.baseline or args.fixed):
        print("loomc run: --planner plans its own steps; drop --baseline/--fixed", file=sys.stderr)
        return 2
    problem = planner_problem(args, planner)
    if problem is not None:
        print(f"loomc run: {problem}", file=sys.stderr)
        return 2
    sinks: list[EventSink] = []
    live = None if args.json else LiveTrace(tokens=not args.no_stream)
    if live is not None:
        sinks.append(live)
    if args.trace:
        sinks.append(JsonlSink(args.trace))
    try:
        project = loomc.Project.load(args.project, args.policy)
        if project.packaged:
            print(
                f"loomc: no project in {args.project}; using the packaged defaults", file=sys.stderr
            )
        if args.credit_per_call is not None:
            with_credit_per_call(project, args.credit_per_call)
        # the run builds the profiler, and only if a guard reads the risk (a fixed tier loads
        # no weights); `semantic` named but not installed is said here (its weights unread)
        if project.policy.risk.profiler == "semantic":
            from loomc.api.profiling import policy_profiler

            notice = getattr(policy_profiler(project.policy.risk), "notice", None)
            if notice:
                print(f"loomc: {notice}", file=sys.stderr)
        if not args.json and planner is not None:
            sinks.insert(0, _PlannerVerdict(planner))
        traces = trace_options(args, args.project, project.packaged)
        result = loomc.run(
            prompt,
            project=project,
            pipeline="baseline" if args.baseline else "fixed" if args.fixed else args.pipeline,
            tier=args.tier,
            ceilings=loomc.Budget(
                calls=args.max_calls,
                tokens=args.max_tokens_total,
                credits=args.max_credits,
                cost=args.max_cost,
                latency_ms=args.max_latency_ms,
            ),
            temperature=args.temperature,
            planner=planner,
            planner_options=_planner_options(args, planner) if planner else None,
            sinks=sinks,
            stream=not args.no_stream,
            **traces,
        )
    except loomc.DiagnosticError as exc:
        _settle(live)
        if args.json:
            doc = json.loads(render_json(exc.diagnostics, refused=True))
            print(json.dumps({"error": "refused; no model was called", **doc}, indent=2))
        print(render_text(exc.diagnostics, limit=MAX_SHOWN), file=sys.stderr)
        print(f"loomc run: {len(exc.diagnostics)} error(s); no model was called", file=sys.stderr)
        return 1
    except loomc.PlanRejected as exc:
        _settle(live)
        if args.json:
            print(json.dumps({"conductor": exc.record}, indent=2, default=str))
        print(f"loomc run: {plain(exc)}; no model was called", file=sys.stderr)
        return 1
    except loomc.LoomcError as exc:  # the store or the OpenTelemetry export cannot be set up
        _settle(live)
        print(f"loomc run: {plain(exc)}; no model was called", file=sys.stderr)
        return 2
    _settle(live)
    if args.json:
        out = result.model_dump(mode="json")
        if result.conductor is not None:
            out["conductor"] = result.conductor
        print(json.dumps(out, indent=2))
        for w in result.warnings:  # the live trace showed them otherwise
            where = f"{w['file']}:{w['line']}:{w['column']}: " if w.get("file") else ""
            print(f"{where}warning[{w['code']}]: {w['message']}", file=sys.stderr)
    else:
        print(plain(result.answer))
        print("\n" + plain(summary_line(result)), file=sys.stderr)
    if result.limited_by is not None:
        print(f"loomc run: {plain(result.limited_by.describe())}", file=sys.stderr)
    if result.stop_reason in ("error", "over-ceiling", "guard-undecided"):
        print(f"loomc run: {plain(result.error)}", file=sys.stderr)
        return 1
    return 0


def _settle(live: Any) -> None:
    """Let the live trace reach stderr before the summary (bounded: stderr may be stuck)."""
    if live is not None:
        live.close()


def summary_line(result: RunResult) -> str:
    """The one-line receipt under the answer: calls, tokens, time, stop, credits, cost.

    Credits from provider receipts are exact and printed plain; credits the policy estimates
    for calls without a receipt are printed with ``~``, so the two are never confused."""
    models = result.models.values()
    actual = sum((m.credits for m in models if m.credits is not None), Decimal(0))
    estimated = sum((m.estimated_credits for m in models), Decimal(0))
    has_receipts = any(m.credits is not None for m in models)
    if has_receipts and estimated:
        credits = f"credits {actual} (receipts) + ~{estimated} (estimated)"
    elif has_receipts:
        credits = f"credits {actual} (receipts)"
    else:
        credits = f"credits ~{estimated} (estimated)"
    cost = f", ${result.cost}" if result.cost is not None and result.cost > 0 else ""
    tier = "@" + result.tier if result.tier else ""
    return (
        f"{result.pipeline}{tier}: {result.calls} call(s), {result.tokens} tokens, "
        f"{result.elapsed_ms} ms, stop: {result.stop_reason}"
        + (f", escalated: {result.escalation_reason}" if result.escalated else "")
        + f", {credits}{cost}, receipt {result.receipt_hash}"
    )


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def _amount(text: str) -> Decimal:
    try:
        value = Decimal(text.lstrip("$"))
    except InvalidOperation as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
    if not value.is_finite() or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text!r}")
    return value


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
    if not 0 <= value <= 2:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"must be between 0 and 2, not {text!r}")
    return value


class _PlannerVerdict:
    """Prints the planner's verdict (a ``conductor-plan`` event) before the run's trace."""

    def __init__(self, planner: str) -> None:
        self.planner = planner

    async def emit(self, event: Any) -> None:
        if event.kind != "conductor-plan":
            return
        d = event.data
        verdict = (
            "accepted"
            if d["accepted"]
            else f"rejected ({', '.join(d['reasons'])}"
            + (f": {'; '.join(d['details'])}" if d.get("details") else "")
            + f"); fallback {d['fallback']}"
        )
        plan = d.get("plan") or {}
        roles = [str(plan[r]) for r in ("writer", "reviewer", "finalizer") if plan.get(r)]
        used = d.get("usage")
        paid = f" (planner: {used['calls']} call(s), {used['tokens']} tokens)" if used else ""
        print(
            plain(
                f"loomc: planner {self.planner}: proposal {verdict}{paid}; running "
                f"{plan.get('policy')} {' -> '.join(roles)}"
            ),
            file=sys.stderr,
        )


def _planner_options(args: argparse.Namespace, planner: str) -> dict[str, Any]:
    options = planner_options(args, learned=planner == "learned")
    options["workers"] = options.get("workers")
    if args.allow_planner_fallback:
        options["allow_fallback"] = True
    return options
