"""`loomc pipelines`: each pipeline x tier the policy can run, with its worst case."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from loomc.cli.reference import add_reference_flags, resolve


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("pipelines", help="list pipeline x tier with worst cases and runnability")
    p.add_argument("--policy", type=Path)
    add_reference_flags(p, adaptive=False)
    p.add_argument("--project", type=Path, default=Path("."))
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import loomc
    from loomc.api.doctor import runnable
    from loomc.checker.render import MAX_SHOWN, render_text

    clash = resolve(args, "pipelines")
    if clash:
        print(f"loomc pipelines: {clash}", file=sys.stderr)
        return 2
    try:
        rows = runnable(args.project, args.policy)
    except loomc.DiagnosticError as exc:
        print(render_text(exc.diagnostics, limit=MAX_SHOWN), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{'pipeline':<14} {'tier':<9} {'runs':<5} {'calls':>5} {'tokens':>7} {'credits':>8} "
        f"{'cost':>9} {'latency':>8}"
    )
    for r in rows:
        w = r["worst"]
        cost = "-" if w["cost"] is None else f"${w['cost']}"
        tokens = "-" if w["tokens"] is None else str(w["tokens"])
        print(
            f"{r['pipeline']:<14} {r['tier'] or '-':<9} {'yes' if r['runnable'] else 'NO':<5} "
            f"{w['calls']:>5} {tokens:>7} {w['credits']:>8} {cost:>9} "
            f"{w['latency_ms'] / 1000:>7g}s"
        )
        for problem in r["problems"][:3]:
            print(f"    {problem}")
    return 0
