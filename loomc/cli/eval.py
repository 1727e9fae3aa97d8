"""`loomc eval`: benchmark strategies over a dataset, with a pre-flight worst case, an eval-wide
budget, a resumable journal and reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loomc.cli.common import _decimal

REPORT_EXTS = (".html", ".svg", ".md", ".json")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("eval", help="benchmark strategies over a JSONL dataset")
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--strategies", default="baseline,fixed,lean,balanced,strict")
    p.add_argument("--iterations", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--limit", type=int)
    p.add_argument("--judge-model", metavar="REF",
                   help="blinded judge: a worker name or provider/model of the policy; it sees "
                        "only task, rubric and answer, and its cost is reported separately")
    p.add_argument("--include-answers", action="store_true")
    p.add_argument("--output", type=Path, required=True, help=".json/.html/.md/.svg")
    p.add_argument("--artifacts", metavar="PREFIX", help="also write PREFIX.{html,svg,md,json}")
    p.add_argument("--resume", action="store_true", help="reuse finished cells from the journal")
    p.add_argument("--dry-run", action="store_true", help="print the worst-case estimate and exit")
    p.add_argument("--max-total-calls", type=int)
    p.add_argument("--max-total-credits", type=_decimal)
    p.add_argument("--max-total-cost", type=_decimal)
    p.add_argument("--run-until-budget", action="store_true",
                   help="start even if the worst case exceeds the totals; stop when they are hit")
    p.add_argument("--policy", type=Path)
    p.add_argument("--project", type=Path, default=Path("."))
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    import anyio
    from rich.progress import Progress

    from loomc import __version__
    from loomc.check.render import render_text
    from loomc.diagnostics import DiagnosticError
    from loomc.eval.dataset import DatasetError, load_dataset
    from loomc.eval.judge import JudgeConfigError, JudgeSpec, resolve_judge
    from loomc.eval.receipt import EvalSettings, build_receipt, sha256_file
    from loomc.eval.records import RunRecord
    from loomc.eval.runner import (
        EvalAborted,
        Journal,
        estimate_json,
        plan_jobs,
        preflight,
        run_matrix,
    )
    from loomc.eval.strategies import StrategyError, parse_strategies
    from loomc.policy.models import RiskSettings
    from loomc.project import load_project
    from loomc.providers.registry import ProviderPool
    from loomc.report.render import render
    from loomc.risk.factory import make_profiler
    from loomc.units import Budget

    if args.output.suffix not in REPORT_EXTS:
        print(f"loomc eval: --output must end in one of {', '.join(REPORT_EXTS)}", file=sys.stderr)
        return 2
    if args.iterations < 1 or args.concurrency < 1:
        print("loomc eval: --iterations and --concurrency must be >= 1", file=sys.stderr)
        return 2
    judge: JudgeSpec | None = None
    try:
        cases = load_dataset(args.dataset, args.limit)
        project = load_project(args.project, args.policy)
        strategies = parse_strategies(args.strategies, set(project.pipeline_names()))
        if args.judge_model:
            judge = resolve_judge(project.policy, args.judge_model)
        jobs = plan_jobs(project, cases, strategies, args.iterations)
    except DatasetError as exc:
        print("\n".join(exc.messages), file=sys.stderr)
        return 1
    except (StrategyError, JudgeConfigError) as exc:
        print(f"loomc eval: {exc}", file=sys.stderr)
        return 2
    except DiagnosticError as exc:
        print(render_text(exc.diagnostics), file=sys.stderr)
        return 1
    est = preflight(jobs, judge)
    print(f"pre-flight worst case for {len(jobs)} runs: {est.total_calls} calls, "
          f"{est.total_tokens if est.total_tokens is not None else 'unbounded'} tokens, "
          f"{est.total_credits} credits, "
          f"{'$' + str(est.total_cost) if est.total_cost is not None else 'USD unknown'}",
          file=sys.stderr)
    for name, row in est.per_strategy.items():
        print(f"  {name:<22} {row['runs']} runs  {row['calls']} calls  {row['credits']} credits",
              file=sys.stderr)
    if judge is not None:
        print(f"  {'judge ' + judge.model:<22} {est.judge_calls} calls  {est.judge_credits} "
              f"credits  {'$' + str(est.judge_cost) if est.judge_cost is not None else 'USD unknown'}"
              " (included above)", file=sys.stderr)
    if args.dry_run:
        print(estimate_json(est))
        return 0
    total = Budget(calls=args.max_total_calls, credits=args.max_total_credits,
                   cost=args.max_total_cost)
    over = [(n, w, c) for n, w, c in (("calls", est.total_calls, total.calls),
                                      ("credits", est.total_credits, total.credits),
                                      ("cost", est.total_cost, total.cost))
            if c is not None and (w is None or w > c)]
    if over and not args.run_until_budget:
        for n, w, c in over:
            print(f"loomc eval: worst-case {n} {w} exceeds --max-total-{n} {c}; refusing to start "
                  "(pass --run-until-budget to run until the budget stops it)", file=sys.stderr)
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    journal = Journal(args.output.with_name(args.output.name + ".journal.jsonl"))
    if not args.resume and journal.path.exists():
        journal.path.unlink()
    keywords = make_profiler(project.policy.risk)
    semantic = make_profiler(RiskSettings(**{**project.policy.risk.model_dump(), "profiler": "semantic"}))
    profilers = {False: keywords, True: semantic}

    async def main() -> list[RunRecord]:
        with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
            task = progress.add_task("eval", total=len(jobs))
            async with ProviderPool(project.policy) as pool:
                return await run_matrix(
                    jobs, policy_pool=pool, profilers=profilers, concurrency=args.concurrency,
                    journal=journal, total=total, include_answers=args.include_answers,
                    on_done=lambda _r: progress.advance(task), judge=judge)

    try:
        records = anyio.run(main)
    except EvalAborted as exc:
        print(f"loomc eval: aborted: {exc} ({journal.path}); fix the cause and rerun with "
              "--resume to finish", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"loomc eval: interrupted; finished runs are kept in {journal.path}; rerun with "
              "--resume to finish", file=sys.stderr)
        return 130
    pricing = {k: v.model_dump(mode="json") for k, v in project.policy.pricing.items()}
    settings = EvalSettings(dataset=str(args.dataset), dataset_sha256=sha256_file(args.dataset),
                            strategies=[s.name for s in strategies], iterations=args.iterations,
                            concurrency=args.concurrency,
                            judge_model=None if judge is None else judge.model,
                            policy=project.policy.name, include_answers=args.include_answers)
    receipt = build_receipt(records, settings, pricing, loomc_version=__version__,
                            created_at=datetime.now(UTC).isoformat(timespec="seconds"))
    outputs = [args.output]
    if args.artifacts:
        outputs += [Path(args.artifacts + ext) for ext in REPORT_EXTS]
    for out in dict.fromkeys(outputs):
        out.parent.mkdir(parents=True, exist_ok=True)
        render(receipt, out)
        print(f"wrote {out}", file=sys.stderr)
    def num(value: float | None, digits: int = 2) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for m in receipt.metrics:
        print(f"{m.strategy:<22} calls {num(m.avg_calls):<6} route {num(m.route_accuracy):<5} "
              f"over {num(m.over_escalation_rate):<5} under {num(m.under_escalation_rate):<5} "
              f"quality {num(m.quality_mean, 1)}{' (checks only)' if m.quality_source == 'checks' else ''}",
              file=sys.stderr)
    if receipt.judge is not None:
        j = receipt.judge
        print(f"judge {j.model}: {j.calls} calls, {j.tokens} tokens, "
              f"{'$' + j.cost_usd if j.cost_usd is not None else 'USD unknown'} (not in workflow "
              f"cost); {j.judged} judged, {j.errors} judge error(s)", file=sys.stderr)
        if j.pending:
            print(f"loomc eval: {j.pending} run(s) not judged within the eval-wide budget; rerun "
                  "with --resume and a larger budget to judge them", file=sys.stderr)
    stopped = sum(r.status == "budget-stopped" for r in receipt.runs)
    if stopped:
        print(f"loomc eval: {stopped} run(s) stopped by the eval-wide budget; rerun with --resume "
              "and a larger budget to finish them", file=sys.stderr)
    return 0
