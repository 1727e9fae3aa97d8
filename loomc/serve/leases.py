"""Budget leases: a server reserves daily budget in blocks and books its runs in memory.

Every served request under a daily budget used to cost two store transactions: its
reservation before the run, its settlement after. Far from every ceiling a server now reserves
a *lease* — up to ``MOST`` runs' worst cases in one ledger row (``Store.lease_many``; at most
``1 / LEASE_SHARE`` of what is left under each ceiling) — and books each run against it in
memory: a run takes its worst case from the lease and, when it ends, gives back what it did
not use. A lease that cannot cover the next run is given back in the transaction that takes the
next one (settled to what it still holds: what its runs used and what its runs still running
hold); once its last run ends it is settled to what its runs used (write-behind). An idle lease
is given back after ``IDLE_S``, and all of them when the server stops.

Why no budget is ever overshot, across threads, processes and replicas: a lease is a committed
reservation checked as any other; the runs booked on it never hold more than it (the book
refuses a run it cannot cover); a settlement only lowers it to what was used or is held. A
process that crashes leaves its leases booked whole: the day's budget then refuses early, never
late. Near a ceiling (under two runs' worth in a share of what is left) the store gives single
reservations instead, and those are settled exactly as before, in the transaction that stores
the run, before its response ends (``commits.py``): the last runs of a budget are counted one by
one across every replica.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from loomc.serve.behind import WriteBehind
from loomc.serve.commits import Ledger
from loomc.store import Scope, StoredRun
from loomc.store.base import from_nano, usage_row
from loomc.units import Usage

MOST = 64  # runs' worth in one lease: what one crashed process can leave booked
IDLE_S = 1.0  # an unused lease goes back after this long: other replicas may need it

Row = tuple[int, int, int, int]  # calls, tokens, credits, cost in ledger units


def usage(row: Sequence[int]) -> Usage:
    return Usage(calls=row[0], tokens=row[1], credits=from_nano(row[2]), cost=from_nano(row[3]))


class Lease:
    """One lease's book: what it may still hand out, what its finished runs used."""

    __slots__ = (
        "held",
        "last",
        "left",
        "open",
        "pending",
        "period",
        "reservation",
        "reserved",
        "unsettled",
        "used",
    )  # fmt: skip

    def __init__(self, reservation: str, period: str, amount: Row, units: int) -> None:
        self.reservation, self.period = reservation, period
        self.reserved = [v * units for v in amount]
        self.left = list(self.reserved)
        self.used = [0, 0, 0, 0]
        self.held = 0  # runs booked and not finished
        self.open = True  # still handing out; closed: given back, settled when `held` is 0
        # given back in a transaction not yet committed: its last run's settlement waits for it
        # (written first, the give-back would raise the row again, over what others reserved)
        self.pending = False
        self.unsettled = False  # its last run ended while `pending`: settle after the give-back
        self.last = time.monotonic()

    def take(self, want: Row) -> bool:
        left = self.left
        if left[0] < want[0] or left[1] < want[1] or left[2] < want[2] or left[3] < want[3]:
            return False
        for i in range(4):
            left[i] -= want[i]
        self.held += 1
        self.last = time.monotonic()
        return True

    def booked(self) -> Usage:
        """What it must keep reserved now: what its finished runs used and its running runs
        hold (everything it has not left to hand out)."""
        return usage([self.reserved[i] - self.left[i] for i in range(4)])


@dataclass(slots=True)
class Ticket:
    """A run's claim on its budgets: on a lease, or a single reservation (``lease`` None)."""

    reservation: str
    want: Row
    lease: Lease | None = None
    done: bool = False


class Budgets:
    """Reservations for the server's runs: leased far from ceilings, exact near them."""

    def __init__(self, ledger: Ledger, behind: WriteBehind, most: int = MOST) -> None:
        self.ledger, self.behind, self.most = ledger, behind, most
        self._leases: dict[tuple[str, ...], Lease] = {}
        self._taking: dict[tuple[str, ...], anyio.Event] = {}
        self._near: set[tuple[tuple[str, ...], str]] = set()  # (scopes, period): exact only
        self.leased = 0  # leases taken (``/metrics``)

    async def reserve(self, scopes: Sequence[Scope], amount: Usage, period: str) -> Ticket:
        """The run's worst case held in every scope; raises ``BudgetExhausted``."""
        names = tuple(s.name for s in scopes)
        want = usage_row(amount)
        while True:
            if (names, period) in self._near:
                reservation = await self.ledger.reserve(scopes, amount, period)
                return Ticket(reservation, want)
            lease = self._leases.get(names)
            if lease is not None and lease.period == period and lease.take(want):
                return Ticket(lease.reservation, want, lease)
            taking = self._taking.get(names)
            if taking is not None:  # another request is taking the next lease: use it
                await taking.wait()
                continue
            return await self._take(names, scopes, amount, period, want, lease)

    async def _take(
        self,
        names: tuple[str, ...],
        scopes: Sequence[Scope],
        amount: Usage,
        period: str,
        want: Row,
        old: Lease | None,
    ) -> Ticket:
        self._taking[names] = taking = anyio.Event()
        try:
            release = None
            if old is not None:  # given back in the same transaction: what it holds is free
                self._leases.pop(names, None)
                release = self._close(old)
                old.pending = True
            try:
                reservation, units = await self.ledger.lease(
                    scopes, amount, period, self.most, release
                )
            finally:
                if old is not None:
                    old.pending = False
                    if old.unsettled:  # its runs ended meanwhile: now it may be settled
                        await self.behind.put((old.reservation, usage(old.used), None))
            if units == 1:  # near a ceiling: this request's own reservation, exact from now
                self._near = {near for near in self._near if near[1] == period}
                self._near.add((names, period))
                return Ticket(reservation, want)
            self.leased += 1
            lease = Lease(reservation, period, want, units)
            lease.take(want)
            self._leases[names] = lease
            return Ticket(reservation, want, lease)
        finally:
            del self._taking[names]
            taking.set()

    def _close(self, lease: Lease) -> tuple[str, Usage]:
        """Close ``lease`` to new runs: its reservation and what it must keep booked."""
        lease.open = False
        return lease.reservation, lease.booked()

    async def finish(self, ticket: Ticket, used: Usage, run: StoredRun | None) -> None:
        """The run ended having used ``used``: settle its share and store ``run``. A single
        reservation is settled with its run before this returns; a leased run (or one under no
        budget: ``ticket`` None) is booked in memory and its run written behind."""
        if ticket.done:
            return
        ticket.done = True
        lease = ticket.lease
        if lease is None:
            if run is None:  # a run that never started: rare, not batched
                await self.ledger.settle(ticket.reservation, used)
            else:
                await self.ledger.settle_and_save(ticket.reservation, used, run)
            return
        spent = usage_row(used)
        for i in range(4):
            lease.used[i] += spent[i]
            if lease.open:
                lease.left[i] += ticket.want[i] - spent[i]
        lease.held -= 1
        if run is not None:
            await self.behind.put((None, used, run))
        if not lease.open and lease.held == 0:
            if lease.pending:
                lease.unsettled = True  # settled once its give-back has committed
            else:
                await self.behind.put((lease.reservation, usage(lease.used), None))

    async def expire(self, idle: float = IDLE_S) -> None:
        """Give back the leases nobody has booked against for ``idle`` seconds."""
        now = time.monotonic()
        for names, lease in list(self._leases.items()):
            if lease.held == 0 and now - lease.last >= idle and names not in self._taking:
                del self._leases[names]
                lease.open = False
                await self.behind.put((lease.reservation, usage(lease.used), None))

    async def keep(self) -> None:
        """The background task that gives back idle leases (runs until cancelled)."""
        while True:
            await anyio.sleep(IDLE_S / 2)
            await self.expire()

    async def close(self) -> None:
        """Give back every lease (the server stops); runs still booked keep their share."""
        for names, lease in list(self._leases.items()):
            del self._leases[names]
            reservation, keep = self._close(lease)
            await self.behind.put((reservation, keep, None))
