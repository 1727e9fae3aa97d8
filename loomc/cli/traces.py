"""`loomc traces list|show|export`: the runs kept in a store (by `loomc serve`, `run`, `eval`)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any


def _since(text: str) -> float:
    """An ISO date or time (UTC when no zone is given), or a span back from now: 30m, 2h, 7d."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if text[:-1].isdigit() and text[-1:] in units:
        return dt.datetime.now(dt.UTC).timestamp() - int(text[:-1]) * units[text[-1]]
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (give 2026-12-03, 2026-12-03T10:00 or 30m, 2h, 7d)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("traces", help="list, show or export stored runs")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb, text in (
        ("list", "one line per run, newest first"),
        ("export", "runs with their events as JSONL"),
    ):
        v = verbs.add_parser(verb, help=text)
        v.add_argument("--pipeline")
        v.add_argument("--tier")
        v.add_argument("--key", help="the serve key's name (never the key itself)")
        v.add_argument("--source", choices=("serve", "run", "eval"), help="which command ran it")
        v.add_argument("--since", type=_since, metavar="WHEN", help="2026-12-03, ...T10:00, 2h")
        v.add_argument("--until", type=_since, metavar="WHEN", help="before this time")
        v.add_argument("--limit", type=int, metavar="N")
        _store_flag(v)
        if verb == "list":
            v.add_argument("--json", action="store_true", help="one JSON object per line")
        else:
            v.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
        v.set_defaults(handler=run)
    s = verbs.add_parser("show", help="one run with its events")
    s.add_argument("run_id", help="a run id or a unique prefix of one")
    _store_flag(s)
    s.set_defaults(handler=run)


def _store_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="URL",
        default=None,
        help="a SQLite path or postgresql://... (default $LOOMC_STORE, else "
        "PROJECT/.loomc/store.db)",
    )
    parser.add_argument("--project", type=Path, default=Path("."), help="project folder")


def run(args: argparse.Namespace) -> int:
    from loomc.store import RunFilter, StoreError, open_store, store_url

    location = store_url(args.store, args.project, required=True)
    assert location is not None
    if "://" not in str(location) and not Path(location).is_file():
        print(f"loomc traces: no store at {location}", file=sys.stderr)
        return 1
    try:
        store = open_store(location)
    except StoreError as exc:
        print(f"loomc traces: {exc}", file=sys.stderr)
        return 1
    try:
        if args.verb == "show":
            found = store.run(args.run_id)
            if found is None:
                print(f"loomc traces: no single run matches {args.run_id!r}", file=sys.stderr)
                return 1
            print(json.dumps(found.to_json(), indent=2, default=str))
            return 0
        where = RunFilter(
            pipeline=args.pipeline,
            tier=args.tier,
            key=args.key,
            since=args.since,
            limit=args.limit,
            source=args.source,
            until=args.until,
        )
        runs = store.runs(where)
        if args.verb == "list":
            _list([r.summary() for r in runs], args.json)
            return 0
        lines = []
        for r in runs:
            full = store.run(r.run_id)
            lines.append(json.dumps((full or r).to_json(), default=str))
        text = "".join(line + "\n" for line in lines)
        if args.output:
            args.output.write_text(text, encoding="utf-8")
            print(f"loomc traces: {len(lines)} run(s) to {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(text)
        return 0
    finally:
        store.close()


def _list(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        for row in rows:
            print(json.dumps(row, default=str))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None)
    columns = (
        "run",
        "when (UTC)",
        "source",
        "model",
        "key",
        "stop",
        "calls",
        "tokens",
        "cost",
        "ms",
    )
    for column in columns:  # the run id (a unique prefix `show` accepts) and time never wrap
        table.add_column(column, no_wrap=column in ("run", "when (UTC)"))
    for row in rows:
        when = dt.datetime.fromtimestamp(row["ts"], dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        model = row["pipeline"] + (f"@{row['tier']}" if row["tier"] else "")
        table.add_row(
            *(
                Text(str(v))
                for v in (  # Text: stored strings never become markup
                    row["run_id"][:12],
                    when,
                    row["source"],
                    model,
                    row["key"] or "-",
                    row["stop_reason"],
                    row["calls"],
                    row["tokens"],
                    row["cost"] or "-",
                    row["elapsed_ms"],
                )
            )
        )
    # piped (no terminal to fit), a row stays one line for grep and friends
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    if not rows:
        print("loomc traces: no runs match", file=sys.stderr)
