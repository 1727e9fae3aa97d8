"""`loomc plan`: the worst-case table per pipeline x tier (what `check` proved, as numbers)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from loomc.cli.common import add_budget_flags, budget_from_args


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("plan", help="print the worst-case table per pipeline x tier")
    p.add_argument("paths", nargs="*", type=Path)
    p.add_argument("--policy", type=Path)
    p.add_argument("--json", action="store_true")
    add_budget_flags(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import loomc
    from loomc.project.plan_table import plan_rows, render_plan_table

    result = loomc.check(args.paths, policy=args.policy, ceilings=budget_from_args(args))
    rows = plan_rows(result)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(render_plan_table(rows))
    return 1 if result.errors else 0
