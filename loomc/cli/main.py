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

# command -> (module under loomc.cli, the one-line help its ``register`` gives); the help is
# repeated here so that `loomc --help` lists every command without importing any of them
# (tests/cli/test_startup.py keeps the two equal).
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "check pipelines and policies; exit 1 on errors"),
    "plan": ("plan", "print the worst-case table per pipeline x tier"),
    "compile": ("compile", "write the canonical, content-hashed plan artifact"),
    "schema": ("schema", "write the JSON Schema of a policy file"),
    "import": ("importer", "convert a reference-runtime JSON config into a policy"),
    "run": ("run", "run a pipeline on a prompt (argument or stdin)"),
    "eval": ("eval", "benchmark strategies over a JSONL dataset"),
    "report": ("report", "render an eval receipt as .html, .svg, .md or .json"),
    "conductor": ("conductor", "conductor research: generate, predict, guard, score, stats"),
    "demo": ("demo", "run the mock-provider demo end to end"),
    "serve": (
        "serve",
        "serve pipelines as OpenAI-compatible models (pipeline@tier) with shared budgets",
    ),
    "traces": ("traces", "list, show or export stored runs"),
    "studio": (
        "studio",
        "open the Studio: compiled graphs, live runs, traces and reports in a local page",
    ),
    "calibrate": (
        "calibrate",
        "propose p95 latency, max tokens and credits per worker from stored runs",
    ),
    "init": ("init", "write a working starter project into DIR (default: .)"),
    "doctor": ("doctor", "check the policy, its keys (by name) and its providers"),
    "pipelines": ("pipelines", "list pipeline x tier with worst cases and runnability"),
}


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size().columns`` gives it (``COLUMNS``,
    else the terminal on stdout, else 80), without importing ``shutil``: it imports ``bz2``,
    ``lzma`` and ``fnmatch``, ~3 ms of every command, for this one number."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"loomc: error: {message}\n")
        raise SystemExit(2)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every argument added (to check its metavar) and each
        # one asks ``shutil`` for the width; the same width, given here (argparse subtracts 2).
        # (typeshed's protocol for formatter classes names only ``prog``; HelpFormatter's
        # every subclass takes ``width``.)
        return self.formatter_class(prog=self.prog, width=_columns() - 2)  # type: ignore[call-arg]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. With ``only``, that command alone is registered in full (its module
    imported); the others are listed by name and help, so a run of one command, or
    ``loomc --help``, imports no other command's module (start-up time)."""
    parser = _Parser(
        prog="loomc",
        description="Compile, prove, run and benchmark budgeted multi-model LLM pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"loomc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module, help_text) in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"loomc.cli.{module}").register(sub)
        elif only in COMMANDS:
            # Another command than the one run: only its line in ``loomc --help`` (what
            # ``add_parser(name, help=...)`` lists), not a parser of its own (~0.3 ms each).
            sub._choices_actions.append(sub._ChoicesPseudoAction(name, (), help_text))
        else:  # no command, or an unknown one: every name is a choice (the error lists them)
            sub.add_parser(name, help=help_text)
    return parser


def _command(argv: Sequence[str]) -> str:
    """The command word of ``argv`` ("" when none): the first word that is not an option (the
    top level has only ``-h`` and ``--version``, which take no value)."""
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(words))
    args = parser.parse_args(words)
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
