"""What a ledger answers when it will not grant a reservation, and why, in words.

``Refused`` is a reservation the ledger turned down (it would pass a ceiling, or the ledger is
already over); ``Overshoot`` is what was really used passing a ceiling, which a provider that
reported more than its worst case can cause. Both are plain values the runtime records on a
step and a run: kept apart from ``loomc.exec.ledger`` so the code that reports a refusal reads
these without the ledger's accounting.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from loomc.exec.result import StopReason
from loomc.units import Dimension


@dataclass(frozen=True)
class Overshoot:
    """What was really used passed a ceiling: by how much, on which ledger and axis."""

    ledger: str
    dimension: Dimension
    used: int | Decimal
    ceiling: int | Decimal

    @property
    def amount(self) -> int | Decimal:
        return self.used - self.ceiling

    def describe(self) -> str:
        if self.ledger == "step":  # the request's own bound: max_tokens
            return (
                f"over ceiling: the provider reported {self.used} completion tokens > max_tokens "
                f"{self.ceiling} (over by {self.amount}); no further call is sent"
            )
        return (
            f"over ceiling: {self.ledger} ledger {self.dimension.value} {_num(self.used)} > "
            f"ceiling {_num(self.ceiling)} (over by {_num(self.amount)}); no further call is sent"
        )


@dataclass
class Refused:
    dimension: Dimension
    ledger: str
    needed: int | Decimal
    ceiling: int | Decimal
    used: int | Decimal
    over: Overshoot | None = None  # set when refused because the ledger is already over

    @property
    def stop_reason(self) -> StopReason:
        return StopReason.OVER_CEILING if self.over else StopReason.ceiling(self.dimension)

    def describe(self) -> str:
        if self.over is not None:
            return self.over.describe()
        return (
            f"{self.ledger} ledger: {self.dimension.value} would reach "
            f"{self.used + self.needed} > ceiling {self.ceiling}"
        )


def _num(value: int | Decimal) -> str:
    """A number as people write it: ``50``, not ``50.0`` or ``5E+1``."""
    return format(value.normalize(), "f") if isinstance(value, Decimal) else str(value)
