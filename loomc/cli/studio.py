"""`loomc studio`: the Studio page on the `loomc serve` application, on 127.0.0.1."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "studio",
        help="open the Studio: compiled graphs, live runs, traces and reports in a local page",
    )
    p.add_argument("project", nargs="?", type=Path, default=Path("."), help="project folder")
    p.add_argument("--policy", type=Path)
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed)")
    p.add_argument(
        "--store",
        metavar="PATH",
        help="runs and the budget ledger (default PROJECT/.loomc/store.db)",
    )
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument(
        "--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug")
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from loomc.checker.render import render_text
    from loomc.diagnostics import DiagnosticError
    from loomc.errors import LoomcError
    from loomc.serve import serve

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print("loomc studio: needs the serve extra: pip install 'loomc[serve]'", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print(f"loomc studio: --port {args.port} is not a port", file=sys.stderr)
        return 2

    def ready(url: str) -> None:
        page = f"{url}/studio/"
        print(f"loomc studio: {page}", flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(page)

    try:
        serve(
            args.project,
            policy=args.policy,
            host="127.0.0.1",  # the Studio runs providers for whoever reaches it: loopback only
            port=args.port,
            store=args.store,
            log_level=args.log_level,
            on_ready=ready,
        )
    except DiagnosticError as exc:
        print(render_text(exc.diagnostics), file=sys.stderr)
        print(f"loomc studio: {len(exc.diagnostics)} error(s); not serving", file=sys.stderr)
        return 1
    except LoomcError as exc:
        print(f"loomc studio: {exc}", file=sys.stderr)
        return 2
    return 0
