"""Typed budget quantities shared by the checker and the runtime.

Each budget dimension is its own unit so that ``latency <= 3 credits`` is a type error, and money
and credits are exact decimals: a ledger that sums floats drifts, and a checker that compares
floats proves nothing.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Final

from loomc.frozen import Frozen, replace


class Dimension(StrEnum):
    """One budget axis; the value is the keyword used in `.loom` budgets and YAML tiers."""

    CALLS = "calls"
    TOKENS = "tokens"
    CREDITS = "credits"
    COST = "cost"  # US dollars
    LATENCY = "latency"  # milliseconds


DURATION_FACTORS: Final = {"ms": 1, "s": 1000, "min": 60_000}


def parse_duration_ms(text: str) -> int:
    """Parse ``45s``, ``1_500ms``, ``2min`` or a bare number of milliseconds into milliseconds."""
    raw = text.strip().replace("_", "")
    for suffix in ("min", "ms", "s"):
        if raw.endswith(suffix):
            number = Decimal(raw[: -len(suffix)])
            return int(number * DURATION_FACTORS[suffix])
    return int(Decimal(raw))


def format_quantity(dimension: Dimension, value: int | Decimal | None) -> str:
    """Human form of a quantity; ``None`` means unbounded / unknown and prints as ``-``."""
    if value is None:
        return "-"
    if dimension is Dimension.COST:
        return f"${Decimal(value):.4f}".rstrip("0").rstrip(".") if value else "$0"
    if dimension is Dimension.LATENCY:
        ms = int(value)
        return f"{ms / 1000:g}s" if ms % 100 == 0 and ms >= 1000 else f"{ms}ms"
    if dimension is Dimension.CREDITS:
        return f"{Decimal(value).normalize():f}"
    return f"{int(value):_}".replace("_", ",") if int(value) >= 10_000 else str(int(value))


# each dimension's field on ``Budget`` (and ``Usage``)
_FIELD = {
    Dimension.CALLS: "calls",
    Dimension.TOKENS: "tokens",
    Dimension.CREDITS: "credits",
    Dimension.COST: "cost",
    Dimension.LATENCY: "latency_ms",
}


class Budget(Frozen):
    """Ceilings on each dimension; ``None`` means no ceiling on that axis."""

    calls: int | None = None
    tokens: int | None = None
    credits: Decimal | None = None
    cost: Decimal | None = None
    latency_ms: int | None = None

    def get(self, dimension: Dimension) -> int | Decimal | None:
        value: int | Decimal | None = getattr(self, _FIELD[dimension])  # no dict per call
        return value

    def tighten(self, other: Budget) -> Budget:
        """The effective ceiling is the tightest of the two on every axis."""

        def tight(a: int | Decimal | None, b: int | Decimal | None) -> int | Decimal | None:
            if a is None:
                return b
            if b is None:
                return a
            return min(a, b)

        return Budget(
            calls=tight(self.calls, other.calls),  # type: ignore[arg-type]
            tokens=tight(self.tokens, other.tokens),  # type: ignore[arg-type]
            credits=tight(self.credits, other.credits),  # type: ignore[arg-type]
            cost=tight(self.cost, other.cost),  # type: ignore[arg-type]
            latency_ms=tight(self.latency_ms, other.latency_ms),  # type: ignore[arg-type]
        )

    def with_value(self, dimension: Dimension, value: int | Decimal | None) -> Budget:
        key = "latency_ms" if dimension is Dimension.LATENCY else dimension.value
        return replace(self, **{key: value})

    def to_json(self) -> dict[str, str | int | None]:
        return {
            "calls": self.calls,
            "tokens": self.tokens,
            "credits": None if self.credits is None else str(self.credits),
            "cost": None if self.cost is None else str(self.cost),
            "latency_ms": self.latency_ms,
        }


class Usage(Frozen):
    """Amounts consumed (or reserved) on every axis; exact decimals for money and credits."""

    calls: int = 0
    tokens: int = 0
    credits: Decimal = Decimal(0)
    cost: Decimal = Decimal(0)
    latency_ms: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls + other.calls,
            tokens=self.tokens + other.tokens,
            credits=self.credits + other.credits,
            cost=self.cost + other.cost,
            latency_ms=self.latency_ms + other.latency_ms,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls - other.calls,
            tokens=self.tokens - other.tokens,
            credits=self.credits - other.credits,
            cost=self.cost - other.cost,
            latency_ms=self.latency_ms - other.latency_ms,
        )

    def get(self, dimension: Dimension) -> int | Decimal:
        values: dict[Dimension, int | Decimal] = {
            Dimension.CALLS: self.calls,
            Dimension.TOKENS: self.tokens,
            Dimension.CREDITS: self.credits,
            Dimension.COST: self.cost,
            Dimension.LATENCY: self.latency_ms,
        }
        return values[dimension]

    def to_json(self) -> dict[str, str | int]:
        return {
            "calls": self.calls,
            "tokens": self.tokens,
            "credits": str(self.credits),
            "cost": str(self.cost),
            "latency_ms": self.latency_ms,
        }


def money_for_tokens(
    input_tokens: int, output_tokens: int, input_per_million: Decimal, output_per_million: Decimal
) -> Decimal:
    """Exact USD for a call at per-million-token prices."""
    million = Decimal(1_000_000)
    return (
        Decimal(input_tokens) * input_per_million + Decimal(output_tokens) * output_per_million
    ) / million
