"""`loomc studio`: the Studio page on the `loomc serve` application, on 127.0.0.1."""

from __future__ import annotations

import argparse
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
        metavar="URL",
        help="runs and the budget ledger: a SQLite path or postgresql://... (default "
        "$LOOMC_STORE, else PROJECT/.loomc/store.db)",
    )
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument(
        "--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug")
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from loomc.cli.serve import start_server

    def ready(url: str) -> None:
        page = f"{url}/studio/"
        print(f"loomc studio: {page}", flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(page)

    # the Studio runs providers for whoever reaches it: loopback only
    return start_server("studio", args, host="127.0.0.1", on_ready=ready)
