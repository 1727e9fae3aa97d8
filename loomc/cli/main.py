"""`loomc` entry point: a thin argparse front over the public API.

Each command lives in its own module exposing ``register(subparsers)``; the module may import
only light packages at top level (startup must stay fast), and its handler returns an exit code:
0 clean, 1 errors found, 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from loomc import __version__

COMMANDS = (
    "check",
    "plan",
    "compile",
    "schema",
    "importer",
    "run",
    "eval",
    "report",
    "conductor",
    "demo",
    "serve",
    "traces",
    "studio",
    "calibrate",
    "init",
    "doctor",
    "pipelines",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"loomc: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="loomc",
        description="Compile, prove, run and benchmark budgeted multi-model LLM pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"loomc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"loomc.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        code: int = handler(args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stderr.write("loomc: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`loomc check --format github | head`): stop quietly, as cat does.
        # Point stdout at devnull so the interpreter's final flush cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    raise SystemExit(main())
