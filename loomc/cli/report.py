"""`loomc report RECEIPT.json --output X`: re-render a saved eval receipt in any format."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", help="render an eval receipt as .html, .svg, .md or .json")
    p.add_argument("receipt", type=Path, help="receipt JSON written by `loomc eval`")
    p.add_argument("--output", "-o", type=Path, action="append", required=True, help="output file")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from loomc.eval.receipt import ReceiptError, load_receipt
    from loomc.report.render import ReportError, render

    try:
        receipt = load_receipt(args.receipt)
        for out in args.output:
            render(receipt, out)
    except (ReceiptError, ReportError) as exc:
        sys.stderr.write(f"loomc: error: {exc}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"loomc: error: {exc.filename}: {exc.strerror}\n")
        return 1
    return 0
