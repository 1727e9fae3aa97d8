"""`loomc calibrate`: propose per-worker policy figures measured from the trace store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from loomc.cli.traces import _since


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate",
        help="propose p95 latency, max tokens and credits per worker from stored runs",
    )
    p.add_argument("project", nargs="?", type=Path, default=Path("."), help="project folder")
    p.add_argument("--policy", type=Path, help="the policy file to calibrate")
    p.add_argument(
        "--store",
        metavar="URL",
        help="a SQLite path or postgresql://... (default $LOOMC_STORE, else "
        "PROJECT/.loomc/store.db)",
    )
    p.add_argument("--since", type=_since, metavar="WHEN", help="only runs since (2h, 7d, ...)")
    p.add_argument("--pipeline", help="only runs of this pipeline")
    p.add_argument("--source", choices=("serve", "run", "eval"), help="only runs from")
    p.add_argument(
        "--min-samples",
        type=int,
        default=20,
        metavar="N",
        help="measured calls a worker needs before its figures change (default 20)",
    )
    p.add_argument("--write", action="store_true", help="apply the proposal to the policy file")
    p.add_argument("--json", action="store_true", help="the evidence and diff as one JSON object")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import loomc
    from loomc.api.calibrating import Calibration, calibrate
    from loomc.checker.render import MAX_SHOWN, render_text
    from loomc.cli.terminal import plain

    if args.min_samples < 1:
        print("loomc calibrate: --min-samples must be >= 1", file=sys.stderr)
        return 2
    try:
        found: Calibration = calibrate(
            args.project,
            policy=args.policy,
            store=args.store,
            since=args.since,
            pipeline=args.pipeline,
            source=args.source,
            min_samples=args.min_samples,
        )
    except loomc.DiagnosticError as exc:
        print(render_text(exc.diagnostics, limit=MAX_SHOWN), file=sys.stderr)
        return 1
    except loomc.LoomcError as exc:
        print(f"loomc calibrate: {plain(exc)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(found.to_json(), indent=2))
    else:
        _evidence(found)
        if found.changed:
            sys.stdout.write(found.diff())
    if not found.changed:
        print("loomc calibrate: the policy already matches the measurements", file=sys.stderr)
    elif args.write:
        found.write()
        print(f"loomc calibrate: wrote {found.policy_path}", file=sys.stderr)
    else:
        print("loomc calibrate: not written; rerun with --write to apply", file=sys.stderr)
    return 0


def _evidence(found: object) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from loomc.api.calibrating import Calibration

    assert isinstance(found, Calibration)
    table = Table(box=None, title=f"{found.runs} stored run(s) in {found.store}")
    for column in ("worker", "runs", "calls", "latency ms p50/p95", "tokens p50/p95/max",
                   "credits/call p50/p95/max", "proposed"):  # fmt: skip
        table.add_column(column)
    for w in found.workers:
        lat, tok, cred = w.latency_ms, w.completion_tokens, w.credits_per_call
        proposed = ", ".join(f"{k} {w.current.get(k)} -> {v}" for k, v in w.proposed.items())
        table.add_row(
            *(
                Text(str(v))
                for v in (
                    w.worker,
                    w.runs,
                    w.calls,
                    "-" if lat is None else f"{lat.p50}/{lat.p95}",
                    "-" if tok is None else f"{tok.p50}/{tok.p95}/{tok.max}",
                    "-" if cred is None else f"{cred.p50}/{cred.p95}/{cred.max}",
                    proposed or "unchanged",
                )
            )
        )
    console = Console(stderr=True)
    console.print(table)
    for w in found.workers:
        for note in w.notes:
            console.print(Text(f"{w.worker}: {note}"))
    for name, n in found.too_few.items():
        console.print(Text(f"{name}: {n} measured call(s), fewer than {found.min_samples}: kept"))
