"""`loomc compile`: write the canonical JSON plan artifact with its content hash."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compile", help="write the canonical, content-hashed plan artifact")
    p.add_argument("paths", nargs="*", type=Path)
    p.add_argument("--policy", type=Path)
    p.add_argument("--output", "-o", type=Path, help="file to write (default: stdout)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import loomc
    from loomc.checker.render import MAX_SHOWN, render_text
    from loomc.ir.artifact import dump_artifact

    try:
        artifact = loomc.compile(args.paths, policy=args.policy)
    except loomc.DiagnosticError as exc:
        print(render_text(exc.diagnostics, limit=MAX_SHOWN), file=sys.stderr)
        print(
            f"loomc compile: {len(exc.diagnostics)} error(s); no artifact written", file=sys.stderr
        )
        return 1
    text = dump_artifact(artifact)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0
