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
    from loomc.check.render import render_text
    from loomc.checking import check_paths
    from loomc.ir.artifact import build_artifact, dump_artifact

    result = check_paths(list(args.paths), args.policy)
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        print(render_text(errors), file=sys.stderr)
        print(f"loomc compile: {len(errors)} error(s); no artifact written", file=sys.stderr)
        return 1
    cases = result.worst_cases()
    text = dump_artifact(
        build_artifact([p for _, p, _ in cases], [w.to_json() for _, _, w in cases])
    )
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0
