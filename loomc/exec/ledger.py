"""The budget ledger: reserve each attempt's worst case before it is sent, reconcile after.

Ledgers chain (a run's ledger under an eval-wide or server-wide one) and share the root's lock,
so a reservation is checked against every ledger of the chain and committed to all of them in
one atomic step: concurrent runs can never overshoot a shared ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import anyio

from loomc.exec.result import StopReason
from loomc.units import Budget, Dimension, Usage


@dataclass
class Reservation:
    amount: Usage
    ledgers: list[Ledger]
    settled: bool = False


@dataclass
class Refused:
    dimension: Dimension
    ledger: str
    needed: int | Decimal
    ceiling: int | Decimal
    used: int | Decimal

    @property
    def stop_reason(self) -> StopReason:
        return StopReason.ceiling(self.dimension)

    def describe(self) -> str:
        return (
            f"{self.ledger} ledger: {self.dimension.value} would reach "
            f"{self.used + self.needed} > ceiling {self.ceiling}"
        )


@dataclass
class Ledger:
    budget: Budget
    parent: Ledger | None = None
    name: str = "run"
    committed: Usage = field(default_factory=Usage)  # outstanding reservations + reconciled actuals
    actual: Usage = field(default_factory=Usage)
    peak: Usage = field(default_factory=Usage)
    _lock: anyio.Lock | None = None

    def __post_init__(self) -> None:
        self._lock = self.parent.lock if self.parent is not None else anyio.Lock()

    @property
    def lock(self) -> anyio.Lock:
        assert self._lock is not None
        return self._lock

    def chain(self) -> list[Ledger]:
        out: list[Ledger] = []
        node: Ledger | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def child(self, budget: Budget, name: str = "run") -> Ledger:
        return Ledger(budget=budget, parent=self, name=name)

    def _refusal(self, amount: Usage) -> Refused | None:
        after = self.committed + amount
        for dim in (Dimension.CALLS, Dimension.CREDITS, Dimension.COST, Dimension.TOKENS):
            ceiling = self.budget.get(dim)
            if ceiling is not None and after.get(dim) > ceiling:
                return Refused(dim, self.name, amount.get(dim), ceiling, self.committed.get(dim))
        return None

    async def reserve(self, amount: Usage) -> Reservation | Refused:
        async with self.lock:
            ledgers = self.chain()
            for ledger in ledgers:
                refused = ledger._refusal(amount)
                if refused is not None:
                    return refused
            for ledger in ledgers:
                ledger.committed = ledger.committed + amount
                ledger.peak = _max(ledger.peak, ledger.committed)
            return Reservation(amount, ledgers)

    async def reconcile(self, reservation: Reservation, actual: Usage) -> None:
        """Replace the reservation by what was really used (never less than one call)."""
        if reservation.settled:
            return
        async with self.lock:
            for ledger in reservation.ledgers:
                ledger.committed = ledger.committed - reservation.amount + actual
                ledger.actual = ledger.actual + actual
            reservation.settled = True


def _max(a: Usage, b: Usage) -> Usage:
    return Usage(
        calls=max(a.calls, b.calls),
        tokens=max(a.tokens, b.tokens),
        credits=max(a.credits, b.credits),
        cost=max(a.cost, b.cost),
        latency_ms=max(a.latency_ms, b.latency_ms),
    )
