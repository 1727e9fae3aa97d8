"""The budget ledger: reserve each attempt's worst case before it is sent, reconcile after.

Ledgers chain (a run's ledger under an eval-wide or server-wide one). A reservation is checked
against every ledger of the chain and committed to all of them in one atomic step: the check and
the commit run without an ``await`` between them, so on the one event loop that runs them no
other task can interleave (no lock is needed, and none is paid for: an anyio lock costs a trip
through the event loop on every acquire). Concurrent runs can never overshoot a shared ceiling.
Ledgers are used from their event loop's thread only.

Three rules keep the ceilings honest when providers and processes are not:

- amounts are clamped at zero: a provider reporting negative tokens or credits never frees
  budget (the caller books the worst of reported and estimated, see ``metered``);
- once what was really used passes a ceiling (a provider reported more than its worst case),
  the ledger is *over*: it grants nothing more and says by how much (``Overshoot``);
- a reservation refused by a shared (parent) ledger only because other reservations are still
  in flight waits for them to settle and retries; it is refused for good only when what is
  settled plus its own worst case cannot fit. Every granted reservation is settled (the caller
  reconciles in a ``finally``), so the wait is bounded by the calls in flight.

A ledger may carry a ``hook`` told of each reservation before the request is sent and of its
settlement after (the eval journal writes both, so a killed eval's calls in flight are counted
as spent when it resumes).
"""

from __future__ import annotations

import os
from decimal import Decimal
from typing import Protocol

import anyio
from anyio.lowlevel import checkpoint_if_cancelled

from loomc.exec.refusals import Overshoot, Refused
from loomc.units import Budget, Dimension, Usage

_BOOKED = (Dimension.CALLS, Dimension.CREDITS, Dimension.COST, Dimension.TOKENS)


class Reservation:
    """One granted reservation: its amount, the ledgers of the chain it is committed to, and
    whether it is settled. Its ``id`` is drawn when first read (a journal hook reads it; most
    runs never do, and a UUID per call is not free)."""

    __slots__ = ("_id", "amount", "axes", "ledgers", "settled")

    def __init__(
        self, amount: Usage, ledgers: list[Ledger], settled: bool = False, id: str | None = None
    ) -> None:
        self.amount, self.ledgers, self.settled, self._id = amount, ledgers, settled, id
        self.axes: list[int | Decimal] | None = None  # the amount by axis, when the ledger has it

    @property
    def id(self) -> str:
        if self._id is None:
            self._id = os.urandom(16).hex()  # 128 random bits, as a UUID4 has, at half the cost
        return self._id

    def __repr__(self) -> str:
        return f"Reservation(amount={self.amount!r}, settled={self.settled!r}, id={self.id!r})"


class LedgerHook(Protocol):
    """Told of every reservation a ledger grants (before the request is sent) and of its
    settlement; a hook that raises on ``reserved`` refuses the reservation."""

    def reserved(self, reservation: Reservation) -> None: ...

    def settled(self, reservation: Reservation, actual: Usage) -> None: ...


class _Settled:
    """Wakes the reservations waiting on a chain when one of its reservations settles: one
    event per generation, replaced each time it fires (shared by every ledger of a chain)."""

    __slots__ = ("event",)

    def __init__(self) -> None:
        self.event: anyio.Event | None = None

    def waiter(self) -> anyio.Event:
        if self.event is None:
            self.event = anyio.Event()
        return self.event

    def fire(self) -> None:
        event, self.event = self.event, None
        if event is not None:
            event.set()


def _axes(usage: Usage) -> list[int | Decimal]:
    return [usage.calls, usage.tokens, usage.credits, usage.cost, usage.latency_ms]


def _usage(axes: list[int | Decimal]) -> Usage:
    c, t, cr, co, la = axes
    return Usage(c, t, cr, co, la)  # type: ignore[arg-type]


# The booked axes by position in a ledger's running sums (calls, tokens, credits, cost, latency).
_INDEX = {Dimension.CALLS: 0, Dimension.TOKENS: 1, Dimension.CREDITS: 2, Dimension.COST: 3}


class Ledger:
    """One scope's running sums (committed, outstanding, actual, peak) under its ``budget``.

    The sums are kept as mutable lists, one number per axis, and read as ``Usage`` values
    (``committed``, ``actual``, ...) only when someone asks: a reservation and its settlement
    update them in place, where frozen ``Usage`` sums built ~12 objects per ledger per call
    (on an eval's chain of three ledgers, the largest single cost of a run)."""

    __slots__ = (
        "_a",
        "_above",
        "_budget",
        "_c",
        "_ceilings_of",
        "_o",
        "_p",
        "_settled",
        "hook",
        "name",
        "parent",
        "pending",
    )

    def __init__(
        self,
        budget: Budget,
        parent: Ledger | None = None,
        name: str = "run",
        committed: Usage | None = None,  # outstanding reservations + settled actuals
        actual: Usage | None = None,
        peak: Usage | None = None,
        outstanding: Usage | None = None,  # granted, not yet settled
        pending: int = 0,  # how many reservations are outstanding
        hook: LedgerHook | None = None,
    ) -> None:
        self.budget, self.parent, self.name, self.pending, self.hook = (
            budget,
            parent,
            name,
            pending,
            hook,
        )
        zero = _ZERO
        self._c: list[int | Decimal] = (
            _axes(committed) if committed is not None else [0, 0, zero, zero, 0]
        )
        self._a: list[int | Decimal] = (
            _axes(actual) if actual is not None else [0, 0, zero, zero, 0]
        )
        self._p: list[int | Decimal] = _axes(peak) if peak is not None else [0, 0, zero, zero, 0]
        self._o: list[int | Decimal] = (
            _axes(outstanding) if outstanding is not None else [0, 0, zero, zero, 0]
        )
        self._settled: _Settled = parent._settled if parent is not None else _Settled()
        # every ledger above this one (a chain never changes once built); not this one itself,
        # which would make each run's ledger a reference cycle that only the cyclic collector
        # frees: an eval's RSS grew with its runs until a full collection came
        self._above: tuple[Ledger, ...] = () if parent is None else (parent, *parent._above)

    def __repr__(self) -> str:
        return (
            f"Ledger(budget={self.budget!r}, name={self.name!r}, committed={self.committed!r}, "
            f"actual={self.actual!r}, peak={self.peak!r}, pending={self.pending!r})"
        )

    @property
    def committed(self) -> Usage:
        return _usage(self._c)

    @committed.setter
    def committed(self, usage: Usage) -> None:
        self._c = _axes(usage)

    @property
    def actual(self) -> Usage:
        return _usage(self._a)

    @actual.setter
    def actual(self, usage: Usage) -> None:
        self._a = _axes(usage)

    def used(self, latency_ms: int) -> Usage:
        """What was really used, with the run's elapsed ``latency_ms``: a receipt's ``used``."""
        a = self._a
        return Usage(a[0], a[1], a[2], a[3], latency_ms)  # type: ignore[arg-type]

    @property
    def peak(self) -> Usage:
        return _usage(self._p)

    @peak.setter
    def peak(self, usage: Usage) -> None:
        self._p = _axes(usage)

    @property
    def outstanding(self) -> Usage:
        return _usage(self._o)

    @outstanding.setter
    def outstanding(self, usage: Usage) -> None:
        self._o = _axes(usage)

    @property
    def settled(self) -> Usage:
        """What is booked for good: settled actuals (and spend seeded from a journal)."""
        return _usage([c - o for c, o in zip(self._c, self._o, strict=True)])

    def carry(self, usage: Usage, peak: Usage | None = None) -> None:
        """Book usage settled by an earlier process on this ledger only: a resumed run's steps
        that completed before a kill (its parents already count them, from the journal).
        ``peak``: this ledger's peak in that process, so the resumed receipt reports it too."""
        add = _axes(nonnegative(usage))
        c, a, p = self._c, self._a, self._p
        for i in range(5):
            c[i] += add[i]
            a[i] += add[i]
            p[i] = max(p[i], c[i])
        if peak is not None:
            for i, v in enumerate(_axes(nonnegative(peak))):
                p[i] = max(p[i], v)

    def chain(self) -> list[Ledger]:
        return [self, *self._above]

    def child(self, budget: Budget, name: str = "run", hook: LedgerHook | None = None) -> Ledger:
        return Ledger(budget=budget, parent=self, name=name, hook=hook)

    @property
    def budget(self) -> Budget:
        return self._budget

    @budget.setter
    def budget(self, budget: Budget) -> None:
        """The ceilings, and the booked axes that have one (worked out here, not per call)."""
        global _LAST_CEILINGS
        self._budget = budget
        last = _LAST_CEILINGS
        if last is not None and last[0] is budget:  # a pipeline's runs share one frozen Budget
            self._ceilings_of = last[1]
            return
        ceilings = tuple((_INDEX[d], d, c) for d in _BOOKED if (c := budget.get(d)) is not None)
        self._ceilings_of = ceilings
        _LAST_CEILINGS = (budget, ceilings)  # one assignment, as ``_LAST``

    def _ceilings(self) -> tuple[tuple[int, Dimension, int | Decimal], ...]:
        """The booked axes this ledger has a ceiling on (most have one or two, many none)."""
        return self._ceilings_of

    def overshoot(self) -> Overshoot | None:
        """The first ceiling that settled usage has passed on this ledger, if any."""
        for i, dim, ceiling in self._ceilings():
            settled = self._c[i] - self._o[i]
            if settled > ceiling:
                return Overshoot(self.name, dim, settled, ceiling)
        return None

    def chain_overshoot(self) -> Overshoot | None:
        """The first overshoot on this ledger or any ledger above it."""
        for ledger in (self, *self._above):
            if ledger._ceilings_of:  # a ledger without a ceiling is never over
                over = ledger.overshoot()
                if over is not None:
                    return over
        return None

    def _refusal(self, amount: list[int | Decimal]) -> Refused | None:
        for i, dim, ceiling in self._ceilings():
            used, needed = self._c[i], amount[i]
            if used + needed > ceiling:
                return Refused(dim, self.name, needed, ceiling, used)
        return None

    def _may_fit_later(self, amount: list[int | Decimal], dim: Dimension) -> bool:
        """Whether settling the reservations in flight could make room for ``amount``."""
        ceiling = self.budget.get(dim)
        i = _INDEX[dim]
        return (
            self.pending > 0
            and ceiling is not None
            and self._c[i] - self._o[i] + amount[i] <= ceiling
        )

    async def reserve(self, amount: Usage, *, wait: bool = True) -> Reservation | Refused:
        """Grant ``amount`` on every ledger of the chain, or say which ceiling refuses it.

        A refusal by a parent ledger that only reservations in flight cause waits for them to
        settle (``wait``), then is decided again."""
        global _LAST
        last = _LAST
        if last is not None and last[0] is amount:  # a step reserves the same Usage each run
            amount, add = last[1], last[2]
        else:
            clean = nonnegative(amount)
            add = _axes(clean)
            _LAST = (amount, clean, add)  # one assignment: another thread sees all or nothing
            amount = clean
        ledgers = [self, *self._above]
        await checkpoint_if_cancelled()  # a cancelled caller reserves nothing
        while True:
            # From here to a return or the wait: no await, so no other task interleaves.
            bounded = [ledger for ledger in ledgers if ledger._ceilings_of]  # most have none
            for ledger in bounded:
                over = ledger.overshoot()
                if over is not None:
                    return Refused(
                        over.dimension,
                        over.ledger,
                        add[_INDEX[over.dimension]],
                        over.ceiling,
                        over.used,
                        over,
                    )
            refused, by = None, self
            for ledger in bounded:
                refused, by = ledger._refusal(add), ledger
                if refused is not None:
                    break
            if refused is None:
                reservation = Reservation(amount, ledgers)
                reservation.axes = add  # read only, here and by reconcile
                for ledger in ledgers:
                    if ledger.hook is not None:
                        ledger.hook.reserved(reservation)  # before anything is committed
                for ledger in ledgers:
                    c, o, p = ledger._c, ledger._o, ledger._p
                    for i in range(5):
                        c[i] += add[i]
                        o[i] += add[i]
                        p[i] = max(p[i], c[i])
                    ledger.pending += 1
                return reservation
            if wait and by is not self and by._may_fit_later(add, refused.dimension):
                await self._settled.waiter().wait()  # until a reservation of the chain settles
                continue
            return refused

    async def reconcile(self, reservation: Reservation, actual: Usage) -> Overshoot | None:
        """Replace the reservation by what was really used (clamped at zero on every axis);
        returns the overshoot of the reservation's chain when settled usage passes a ceiling."""
        if reservation.settled:
            return None
        actual = nonnegative(actual)
        got = _axes(actual)
        held = reservation.axes if reservation.axes is not None else _axes(reservation.amount)
        # No await from here on: the settlement is atomic on the event loop (and never cancelled
        # half-way, so a call that was sent is always booked).
        for ledger in reservation.ledgers:
            c, o, a = ledger._c, ledger._o, ledger._a
            for i in range(5):
                c[i] = c[i] - held[i] + got[i]
                o[i] -= held[i]
                a[i] += got[i]
            ledger.pending -= 1
        reservation.settled = True
        self._settled.fire()
        if reservation.ledgers and reservation.ledgers[0]._settled is not self._settled:
            reservation.ledgers[0]._settled.fire()
        for ledger in reservation.ledgers:
            if ledger.hook is not None:
                ledger.hook.settled(reservation, actual)
        return reservation.ledgers[0].chain_overshoot() if reservation.ledgers else None


_ZERO = Decimal(0)
# the last budget a ledger was built with and its ceilings (``Budget`` is frozen)
_LAST_CEILINGS: tuple[Budget, tuple[tuple[int, Dimension, int | Decimal], ...]] | None = None
# the last amount reserved, clamped, and by axis: the same frozen Usage comes back run after run
_LAST: tuple[Usage, Usage, list[int | Decimal]] | None = None


def _kept(amount: Decimal) -> bool:
    """Whether clamping keeps ``amount`` as it is, down to its digits: positive, or exactly
    ``Decimal(0)`` (a ``0.00`` or ``-0`` is replaced by ``Decimal(0)``, and the JSON shows it)."""
    if not amount.is_finite():
        return False
    return amount > _ZERO or (
        amount.is_zero() and not amount.is_signed() and amount.adjusted() == 0
    )


def nonnegative(usage: Usage) -> Usage:
    """``usage`` with every axis clamped at zero (a negative amount never frees budget)."""
    if (
        usage.calls >= 0
        and usage.tokens >= 0
        and usage.latency_ms >= 0
        and _kept(usage.credits)
        and _kept(usage.cost)
    ):
        return usage  # nothing to clamp (nearly always): Usage is frozen, so it can be shared
    zero = _ZERO
    return Usage(
        calls=max(usage.calls, 0),
        tokens=max(usage.tokens, 0),
        credits=usage.credits if usage.credits.is_finite() and usage.credits > zero else zero,
        cost=usage.cost if usage.cost.is_finite() and usage.cost > zero else zero,
        latency_ms=max(usage.latency_ms, 0),
    )
