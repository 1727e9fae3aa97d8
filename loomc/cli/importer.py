"""`loomc import CONFIG.json`: convert a reference-runtime config into a policy file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("import", help="convert a reference-runtime JSON config into a policy")
    p.add_argument("config", type=Path)
    p.add_argument("--output", "-o", type=Path)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from loomc.policy.importer import ImportError_, import_file

    try:
        text = import_file(args.config)
    except ImportError_ as exc:
        print(f"loomc import: {exc}", file=sys.stderr)
        return 1
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return 0
