"""`loomc eval`: benchmark strategies over a dataset, with a pre-flight worst case, an eval-wide
budget, a resumable journal and reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from loomc.cli.common import _decimal
from loomc.cli.planner_flags import add_planner_flags, planner_options, planner_problem
from loomc.cli.reference import add_reference_flags, resolve, translate_strategies
from loomc.cli.terminal import plain
from loomc.cli.tracing import add_trace_flags, trace_options

REPORT_EXTS = (".html", ".svg", ".md", ".json")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("eval", help="benchmark strategies over a JSONL dataset")
    p.add_argument("dataset_arg", nargs="?", type=Path, metavar="DATASET", help="a JSONL dataset")
    p.add_argument("--dataset", type=Path, help="the dataset (or give it as DATASET)")
    p.add_argument("--strategies", default="baseline,fixed,lean,balanced,strict")
    p.add_argument("--iterations", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--limit", type=int)
    p.add_argument(
        "--judge-model",
        metavar="REF",
        help="blinded judge: a worker name or provider/model of the policy; it sees "
        "only task, rubric and answer, and its cost is reported separately",
    )
    p.add_argument("--include-answers", action="store_true")
    p.add_argument(
        "--output",
        type=Path,
        help=".json/.html/.md/.svg; the JSON receipt is always written beside it",
    )
    p.add_argument(
        "--artifacts",
        metavar="PREFIX",
        help="write PREFIX.{html,svg,md,json} (without --output or --artifacts: "
        "PROJECT/.loomc/evals/DATASET-NAME)",
    )
    p.add_argument("--resume", action="store_true", help="reuse finished cells from the journal")
    p.add_argument("--dry-run", action="store_true", help="print the worst-case estimate and exit")
    p.add_argument("--max-total-calls", type=int)
    p.add_argument("--max-total-credits", type=_decimal)
    p.add_argument("--max-total-cost", type=_decimal)
    p.add_argument(
        "--run-until-budget",
        action="store_true",
        help="start even if the worst case exceeds the totals; stop when they are hit",
    )
    p.add_argument("--policy", type=Path)
    add_reference_flags(p, adaptive=False)
    add_trace_flags(p)
    p.add_argument("--project", type=Path, default=Path("."))
    c = p.add_argument_group(
        "conductor", "options of the planners behind conductor:PLANNER strategies"
    )
    add_planner_flags(c)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import loomc
    from loomc.api.conducting import PlanningFailed
    from loomc.checker.render import MAX_SHOWN, render_text
    from loomc.eval.judge import JudgeConfigError

    clash = resolve(args, "eval")
    if clash:
        print(f"loomc eval: {clash}", file=sys.stderr)
        return 2
    args.strategies = translate_strategies(args.strategies, "eval")
    if args.dataset is None:
        args.dataset = args.dataset_arg
    if args.dataset is None or args.dataset_arg not in (None, args.dataset):
        print(
            "loomc eval: give the dataset once, as DATASET or --dataset FILE "
            "(e.g. loomc eval evals/smoke.jsonl)",
            file=sys.stderr,
        )
        return 2
    if args.output is None and not args.artifacts:  # the project's own folder, as the store
        args.artifacts = str(args.project / ".loomc" / "evals" / args.dataset.stem)
    if args.output is not None and args.output.suffix not in REPORT_EXTS:
        print(f"loomc eval: --output must end in one of {', '.join(REPORT_EXTS)}", file=sys.stderr)
        return 2
    if args.iterations < 1 or args.concurrency < 1:
        print("loomc eval: --iterations and --concurrency must be >= 1", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 1:
        print("loomc eval: --limit must be >= 1 (the number of cases to run)", file=sys.stderr)
        return 2
    if args.max_total_calls is not None and args.max_total_calls < 0:
        print("loomc eval: --max-total-calls must be >= 0", file=sys.stderr)
        return 2
    learned = "conductor:learned" in args.strategies
    problem = planner_problem(args, "learned" if learned else None)
    if problem is not None:
        print(f"loomc eval: {problem} (for conductor:learned)", file=sys.stderr)
        return 2
    outputs = report_paths(args.output, args.artifacts)
    receipt_path = next(p for p in outputs if p.suffix == ".json")
    journal = receipt_path.with_name(receipt_path.name + ".journal.jsonl")
    if not args.dry_run:  # every file the eval will write, checked before anything is spent
        for path in [journal, *dict.fromkeys(outputs)]:
            problem = _unwritable(path)
            if problem is not None:
                print(
                    f"loomc eval: cannot write {path}: {problem}; nothing was run", file=sys.stderr
                )
                return 2
    try:
        ev = loomc.prepare_eval(
            args.dataset,
            args.strategies,
            project=args.project,
            policy=args.policy,
            iterations=args.iterations,
            concurrency=args.concurrency,
            limit=args.limit,
            judge=args.judge_model,
            include_answers=args.include_answers,
            planner_options=planner_options(args, learned=learned),
            allow_planner_fallback=args.allow_planner_fallback,
            resume_journal=journal if args.resume else None,
        )
    except loomc.DatasetError as exc:
        print("\n".join(exc.messages), file=sys.stderr)
        return 1
    except (loomc.StrategyError, JudgeConfigError, ValueError) as exc:
        print(f"loomc eval: {exc}", file=sys.stderr)
        return 2
    except loomc.DiagnosticError as exc:
        print(render_text(exc.diagnostics, limit=MAX_SHOWN), file=sys.stderr)
        return 1
    except PlanningFailed as exc:
        print(f"loomc eval: {plain(str(exc))}; nothing was run", file=sys.stderr)
        return 1
    _print_estimate(ev)
    if args.dry_run:
        print(ev.estimate_json())
        return 0
    totals = loomc.Budget(
        calls=args.max_total_calls, credits=args.max_total_credits, cost=args.max_total_cost
    )
    over = ev.over(totals)
    if over and not args.run_until_budget:
        for n, w, c in over:
            print(
                f"loomc eval: worst-case {n} {w} exceeds --max-total-{n} {c}; refusing to start "
                "(pass --run-until-budget to run until the budget stops it)",
                file=sys.stderr,
            )
        return 1
    try:
        traces = trace_options(args, args.project, ev.project.packaged)
    except loomc.LoomcError as exc:  # the store or the OpenTelemetry export cannot be set up
        print(f"loomc eval: {exc}; nothing was run", file=sys.stderr)
        return 2
    receipt, code = _run_with_progress(ev, journal, args.resume, totals, traces)
    if receipt is None:
        return code
    for out in dict.fromkeys(outputs):
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            loomc.render(receipt, out)
        except OSError as exc:  # e.g. the disk filled up during the eval
            print(
                f"loomc eval: cannot write {out}: {exc.strerror or exc}; the results are kept "
                f"in {journal}: rerun with --resume to write the reports without paying again",
                file=sys.stderr,
            )
            return 1
        print(f"wrote {out}", file=sys.stderr)
    _print_summary(receipt)
    passed = [
        (r, r.result)
        for r in receipt.runs
        if r.result is not None and r.result.stop_reason == "over-ceiling"
    ]
    for r, res in passed[:5]:  # a provider reported more than a ceiling allowed: say so, exit 1
        print(
            f"loomc eval: case {r.case_id!r} x {r.strategy} #{r.iteration}: {res.error}",
            file=sys.stderr,
        )
    return 1 if passed else 0


def report_paths(output: Path | None, artifacts: str | None) -> list[Path]:
    """Every file to write, the JSON receipt always among them (beside --output when that is
    another format, so `loomc report` can re-render any run); the journal sits next to it."""
    outputs = [] if output is None else [output]
    if artifacts:
        outputs += [Path(artifacts + ext) for ext in REPORT_EXTS]
    if not any(p.suffix == ".json" for p in outputs):
        outputs.append(outputs[0].with_suffix(".json"))
    return list(dict.fromkeys(outputs))


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written (None when it can): its folder is created and the file
    opened for appending, then removed again if it did not exist."""
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    if not existed:
        path.unlink(missing_ok=True)
    return None


def _run_with_progress(
    ev: Any, journal: Path, resume: bool, totals: Any, traces: dict[str, Any] | None = None
) -> tuple[Any, int]:
    """Run with a progress bar; (None, exit code) after one line on stderr when aborted (1) or
    interrupted (130)."""
    from rich.progress import Progress

    import loomc
    from loomc.api.conducting import PlanningFailed

    with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("eval", total=len(ev.jobs))
        try:
            return ev.run(
                journal=journal,
                resume=resume,
                totals=totals,
                on_done=lambda _r: progress.advance(task),
                on_notice=lambda line: print(f"loomc eval: {line}", file=sys.stderr),
                **(traces or {}),
            ), 0
        except PlanningFailed as exc:  # the learned planner, asked once the eval started
            print(
                f"loomc eval: {plain(str(exc))}; no case was run (the plans already paid for are "
                f"kept in {journal}: --resume reuses them)",
                file=sys.stderr,
            )
            return None, 1
        except loomc.EvalAborted as exc:
            print(
                f"loomc eval: aborted: {exc} ({journal}); fix the cause and rerun with "
                "--resume to finish",
                file=sys.stderr,
            )
        except loomc.LoomcError as exc:  # the trace store cannot be opened: nothing ran
            print(f"loomc eval: {exc}; nothing was run", file=sys.stderr)
            return None, 2
        except KeyboardInterrupt:
            print(
                f"loomc eval: interrupted; finished runs are kept in {journal}; rerun with "
                "--resume to finish",
                file=sys.stderr,
            )
            return None, 130
    return None, 1


def _print_estimate(ev: Any) -> None:
    est, judge = ev.estimate, ev.judge
    print(
        f"pre-flight worst case for {len(ev.jobs)} runs: {est.total_calls} calls, "
        f"{est.total_tokens if est.total_tokens is not None else 'unbounded'} tokens, "
        f"{est.total_credits} credits, "
        f"{'$' + str(est.total_cost) if est.total_cost is not None else 'USD unknown'}",
        file=sys.stderr,
    )
    for name, row in est.per_strategy.items():
        extra = f"  + {row['planner_calls']} planner calls" if row.get("planner_calls") else ""
        if row.get("bound"):
            extra += " (at most: planned when the eval starts)"
        print(
            f"  {name:<22} {row['runs']} runs  {row['calls']} calls  {row['credits']} credits"
            f"{extra}",
            file=sys.stderr,
        )
    if judge is not None:
        print(
            f"  {'judge ' + judge.model:<22} {est.judge_calls} calls  {est.judge_credits} "
            f"credits  {'$' + str(est.judge_cost) if est.judge_cost is not None else 'USD unknown'}"
            " (included above)",
            file=sys.stderr,
        )
    if est.planner_calls:
        unpriced = ", ".join(est.planner_unpriced)
        print(
            f"  {'planner calls':<22} {est.planner_calls} calls  {est.planner_tokens} tokens  "
            f"{est.planner_credits} credits  "
            f"{'$' + str(est.planner_cost) if est.planner_cost is not None else 'USD unknown'}"
            f"{' (unpriced: ' + unpriced + ')' if unpriced else ''} (included above)",
            file=sys.stderr,
        )


def _print_summary(receipt: Any) -> None:
    def num(value: float | None, digits: int = 2) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    def interval(
        ci: tuple[float, float] | None, point: float | None, digits: int = 1, scale: float = 1
    ) -> str:
        if point is None:
            return ""
        if ci is None:
            return " [n/a]"
        return f" [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"

    def usd(value: str | None) -> str:
        return "-" if value is None else f"${float(value):.4f}"

    for m in receipt.metrics:
        checks = " (checks only)" if m.quality_source == "checks" else ""
        passed = "-" if m.pass_rate is None else f"{m.pass_rate * 100:.0f}%"
        print(
            f"{m.strategy:<22} quality {num(m.quality_mean, 1)}"
            f"{interval(m.quality_ci, m.quality_mean)}{checks}  pass {passed}"
            f"{interval(m.pass_ci, m.pass_rate, 0, 100)}  calls {num(m.avg_calls)}  "
            f"{usd(m.avg_cost_usd)}/run{' (unpriced)' if m.missing_pricing else ''}  "
            f"p50 {num(m.p50_ms, 0)} ms  p95 {num(m.p95_ms, 0)} ms  "
            f"route {num(m.route_accuracy)}  over {num(m.over_escalation_rate)}  "
            f"under {num(m.under_escalation_rate)}",
            file=sys.stderr,
        )
    for name, d in receipt.planners.items():
        policies = ", ".join(f"{k} {v}" for k, v in d["policies"].items())
        fell = f"; {d['fallbacks']} fell back to risk" if d["fallbacks"] else ""
        why = ", ".join(f"{k} {v}" for k, v in d["rejections"].items())
        used = d.get("usage")
        paid = ""
        if used:
            cost = used.get("cost")
            money = f", ${cost}" if cost is not None else ", USD unknown" if "cost" in used else ""
            paid = f"; planner calls {used['calls']}, {used['tokens']} tokens{money}"
        print(
            plain(
                f"{name:<22} planner {d['planner']}: {d['accepted']}/{d['decisions']} proposals "
                f"accepted{fell}{' (' + why + ')' if why else ''}; plans: {policies}{paid}"
            ),
            file=sys.stderr,
        )
    source = receipt.settings.answers
    if source not in (None, "model"):
        some = " for some workers" if source.endswith("+model") else ""
        how = "scripted" if source.startswith("scripted") else "produced"  # the receipt's kinds
        print(
            f"note: answers are {how} by the mock provider{some}, not "
            "written by a model: the numbers show the pipeline, not model quality",
            file=sys.stderr,
        )
    if receipt.judge is not None:
        j = receipt.judge
        print(
            f"judge {j.model}: {j.calls} calls, {j.tokens} tokens, "
            f"{'$' + j.cost_usd if j.cost_usd is not None else 'USD unknown'} (not in workflow "
            f"cost); {j.judged} judged, {j.errors} judge error(s)",
            file=sys.stderr,
        )
        if j.pending:
            print(
                f"loomc eval: {j.pending} run(s) not judged within the eval-wide budget; rerun "
                "with --resume and a larger budget to judge them",
                file=sys.stderr,
            )
    stopped = sum(r.status == "budget-stopped" for r in receipt.runs)
    if stopped:
        print(
            f"loomc eval: {stopped} run(s) stopped by the eval-wide budget; rerun with --resume "
            "and a larger budget to finish them",
            file=sys.stderr,
        )
