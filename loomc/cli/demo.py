"""`loomc demo`: the whole product on the mock provider — check, compile, plan, run, eval, report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

LOW = "What is the capital of Poland? Return only the city."
HIGH = (
    "Customers are sometimes charged twice when they double-click Pay. Review the checkout handler."
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="run the mock-provider demo end to end")
    p.add_argument("--output", type=Path, default=Path("reports/demo"))
    p.add_argument("--project", type=Path, default=Path("."))
    p.set_defaults(handler=run)


def _step(title: str) -> None:
    print(f"\n== {title}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from loomc.cli.main import main as loomc
    from loomc.project.defaults import fallback_root

    out: Path = args.output
    packaged = fallback_root(args.project)
    if packaged is not None:
        print(
            f"loomc demo: no project in {args.project}; using the packaged defaults",
            file=sys.stderr,
        )
        args.project = packaged
    out.mkdir(parents=True, exist_ok=True)
    project = str(args.project)
    steps: list[tuple[str, list[str]]] = [
        ("check: prove every pipeline x tier against every policy", ["check", project]),
        (
            "compile: the content-hashed plan artifact",
            [
                "compile",
                project,
                "--policy",
                str(args.project / "policies/default.yaml"),
                "--output",
                str(out / "plan.json"),
            ],
        ),
        (
            "plan: worst cases beside ceilings (default policy)",
            ["plan", project, "--policy", str(args.project / "policies/default.yaml")],
        ),
        (
            "run: a low-risk prompt at balanced (expect 1 call)",
            ["run", "--project", project, "--tier", "balanced", "--no-stream", LOW],
        ),
        (
            "run: a high-risk prompt at balanced (expect 2 calls)",
            ["run", "--project", project, "--tier", "balanced", "--no-stream", HIGH],
        ),
        (
            "eval: baseline vs fixed vs lean / balanced / strict on evals/mixed-routing.jsonl "
            "(answers scripted per role by policies/demo.yaml)",
            [
                "eval",
                "--project",
                project,
                "--policy",
                str(args.project / "policies/demo.yaml"),
                "--dataset",
                str(args.project / "evals/mixed-routing.jsonl"),
                "--strategies",
                "baseline,fixed,lean,balanced,strict",
                "--concurrency",
                "8",
                "--include-answers",
                "--output",
                str(out / "eval.html"),
                "--artifacts",
                str(out / "eval"),
            ],
        ),
    ]
    for title, argv in steps:
        _step(title)
        code = loomc(argv)
        if code != 0:
            print(f"loomc demo: step failed ({' '.join(argv[:1])}, exit {code})", file=sys.stderr)
            return code
    _step(f"done: open {out / 'eval.html'}")
    return 0
