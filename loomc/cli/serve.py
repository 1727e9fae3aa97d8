"""`loomc serve`: the project's pipelines behind the OpenAI chat-completions API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="serve pipelines as OpenAI-compatible models (pipeline@tier) with shared budgets",
    )
    p.add_argument("project", nargs="?", type=Path, default=Path("."), help="project folder")
    p.add_argument("--policy", type=Path)
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; others need serve.keys)",
    )
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed)")
    p.add_argument(
        "--store",
        metavar="URL",
        help="runs and the budget ledger: a SQLite path or postgresql://... (default "
        "$LOOMC_STORE, else PROJECT/.loomc/store.db)",
    )
    p.add_argument(
        "--otel",
        action="store_true",
        help="export runs as OpenTelemetry spans over OTLP/HTTP (also on when "
        "OTEL_EXPORTER_OTLP_ENDPOINT is set; needs loomc[otel])",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="server processes on the one port, sharing the store and its budgets (default 1)",
    )
    p.add_argument(
        "--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug")
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return start_server("serve", args, host=args.host, otel=args.otel)


def start_server(
    command: str,
    args: argparse.Namespace,
    *,
    host: str,
    otel: bool = False,
    on_ready: Callable[[str], None] | None = None,
) -> int:
    """Run the serve application for ``loomc serve`` and ``loomc studio`` (``command`` names
    which in every message): the extra checked, the port checked, compile errors and server
    errors as one-line messages with their exit codes."""
    from loomc.checker.render import MAX_SHOWN, render_text
    from loomc.diagnostics import DiagnosticError
    from loomc.errors import LoomcError
    from loomc.serve import serve

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print(
            f"loomc {command}: needs the serve extra: pip install 'loomc[serve]'", file=sys.stderr
        )
        return 2
    if not 0 <= args.port <= 65535:
        print(f"loomc {command}: --port {args.port} is not a port", file=sys.stderr)
        return 2
    try:
        serve(
            args.project,
            policy=args.policy,
            host=host,
            port=args.port,
            store=args.store,
            log_level=args.log_level,
            otel=otel,
            on_ready=on_ready,
            workers=getattr(args, "workers", 1),
        )
    except DiagnosticError as exc:
        print(render_text(exc.diagnostics, limit=MAX_SHOWN), file=sys.stderr)
        print(f"loomc {command}: {len(exc.diagnostics)} error(s); not serving", file=sys.stderr)
        return 1
    except LoomcError as exc:
        print(f"loomc {command}: {exc}", file=sys.stderr)
        return 2
    return 0
