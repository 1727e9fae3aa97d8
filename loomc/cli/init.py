"""`loomc init [DIR]`: write a starter project (pipeline, mock policy, eval set, CI, pre-commit)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("init", help="write a working starter project into DIR (default: .)")
    p.add_argument("dir", nargs="?", type=Path, default=Path("."))
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from loomc.project.scaffold import ScaffoldError, init_project

    try:
        written = init_project(args.dir)
    except (ScaffoldError, OSError) as exc:
        print(f"loomc init: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    print(f"next: cd {args.dir} && loomc check && loomc run 'hello'", file=sys.stderr)
    return 0
