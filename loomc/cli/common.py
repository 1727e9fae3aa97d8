"""Helpers shared by command modules: the budget flags and decimal arguments."""

from __future__ import annotations

import argparse
from decimal import Decimal, InvalidOperation

from loomc.units import Budget


def add_budget_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("ceilings (tighten the pipeline's and the tier's)")
    g.add_argument("--max-calls", type=int, metavar="N")
    g.add_argument("--max-tokens-total", type=int, metavar="N", dest="max_tokens_total")
    g.add_argument("--max-credits", type=_decimal, metavar="X")
    g.add_argument("--max-cost", type=_decimal, metavar="USD")
    g.add_argument("--max-latency-ms", type=int, metavar="N")


def budget_from_args(args: argparse.Namespace) -> Budget:
    return Budget(
        calls=getattr(args, "max_calls", None),
        tokens=getattr(args, "max_tokens_total", None),
        credits=getattr(args, "max_credits", None),
        cost=getattr(args, "max_cost", None),
        latency_ms=getattr(args, "max_latency_ms", None),
    )


def _decimal(text: str) -> Decimal:
    try:
        value = Decimal(text.lstrip("$"))
    except InvalidOperation as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value
