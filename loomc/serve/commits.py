"""Group commit: the store writes of requests that arrive together, in one transaction.

At 128 requests in flight every request used to pay two transactions of its own (reserve
before the run; settle + stored run after it), each a ``BEGIN IMMEDIATE`` ... ``COMMIT`` on
the event loop. Here the first request to arrive leads: it lets the event loop finish its
turn (every request ready in that turn joins), then writes the whole batch with the store's
``*_many`` method. Requests that arrive while a batch is being written (in a worker thread,
when the store was busy) wait and form the next batch, led by the first of them.

Nothing is weaker than one transaction per request: a request returns only after the
transaction holding its write committed, a reservation is still checked against everything
reserved before it (in its batch and in earlier ones), and a failed transaction fails every
request of its batch alone. These are the exact reservations (near a ceiling) and the leases
(``leases.py``); runs booked on a lease or under no budget are stored behind their response
(``behind.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import anyio
import anyio.lowlevel

from loomc.store import BudgetExhausted, Scope, Store, StoredRun
from loomc.units import Usage


class Counted(Protocol):
    batches: int  # transactions written
    items: int  # the writes they carried


class _Waiter:
    __slots__ = ("args", "done", "error", "value", "wake")

    def __init__(self, args: Any) -> None:
        self.args = args
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.wake: anyio.Event | None = None


class GroupCommit:
    """One method of the store, called in batches (``reserve_many``, ``settle_and_save_many``).

    The method takes a list of arguments and returns one outcome per item (a value, or an
    exception to raise in that item's caller) or None when it has no per-item result."""

    def __init__(self, store: Store, method: str, alone: Callable[[], bool] = lambda: False):
        self.store, self.method, self.alone = store, method, alone
        self._queue: list[_Waiter] = []
        self._busy = False
        self.batches = 0  # written so far, and the items in them: the benchmark reports both
        self.items = 0

    async def submit(self, args: Any) -> Any:
        """Write ``args`` with the next batch; its outcome once the batch committed."""
        me = _Waiter(args)
        self._queue.append(me)
        with anyio.CancelScope(shield=True):  # a queued write is always seen through
            while self._busy and not me.done:
                me.wake = anyio.Event()
                await me.wake.wait()
            if not me.done:
                await self._lead()
        if me.error is not None:
            raise me.error
        return me.value

    async def _lead(self) -> None:
        self._busy = True
        try:
            if not self.alone():  # no other request in flight: nobody to wait for
                await anyio.lowlevel.checkpoint()  # the rest of this loop turn joins the batch
            batch, self._queue = self._queue, []
            try:
                got = await self._write([w.args for w in batch])
                outcomes = got if got is not None else [None] * len(batch)
                for waiter, outcome in zip(batch, outcomes, strict=True):
                    if isinstance(outcome, BaseException):
                        waiter.error = outcome
                    else:
                        waiter.value = outcome
            except Exception as exc:  # the transaction failed: every request of the batch
                for waiter in batch:
                    waiter.error = exc
            self.batches += 1
            self.items += len(batch)
            for waiter in batch:
                waiter.done = True
                if waiter.wake is not None:
                    waiter.wake.set()
        finally:
            self._busy = False
            if self._queue and self._queue[0].wake is not None:
                self._queue[0].wake.set()  # arrived while we wrote: the first of them leads

    async def _write(self, items: list[Any]) -> Any:
        """On the event loop when the store can do it without waiting (an uncontended SQLite
        file: cheaper than a hop to a thread), else in a worker thread, where it may wait."""
        now = getattr(self.store, "try_now", None)
        if now is not None:
            done, value = now(self.method, items)
            if done:
                return value
        return await anyio.to_thread.run_sync(getattr(self.store, self.method), items)


class Ledger:
    """The server's side of the store: reservations and settlements, batched."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.in_flight = 0  # chat requests being handled (the server's handler counts them)

        def alone() -> bool:
            return self.in_flight <= 1

        self.reserves = GroupCommit(store, "reserve_many", alone)
        self.settles = GroupCommit(store, "settle_and_save_many", alone)
        self.leases = GroupCommit(store, "lease_many", alone)

    def render(self, more: Sequence[tuple[str, Counted]] = ()) -> str:
        """Prometheus lines: store transactions and the writes they carried, per kind (their
        ratio is the batch size the group commit reaches under the current load); ``more``:
        other writers counted the same way (the write-behind queue)."""
        kinds: list[tuple[str, Counted]] = [
            ("reserve", self.reserves),
            ("settle", self.settles),
            ("lease", self.leases),
        ]
        kinds += more
        lines = [
            "# HELP loomc_store_transactions_total Store transactions written by the server.",
            "# TYPE loomc_store_transactions_total counter",
        ]
        lines += [f'loomc_store_transactions_total{{kind="{k}"}} {c.batches}' for k, c in kinds]
        lines += [
            "# HELP loomc_store_writes_total Requests' reservations and settlements written.",
            "# TYPE loomc_store_writes_total counter",
        ]
        lines += [f'loomc_store_writes_total{{kind="{k}"}} {c.items}' for k, c in kinds]
        return "\n".join(lines) + "\n"

    async def reserve(self, scopes: Sequence[Scope], amount: Usage, period: str) -> str:
        """The reservation's id; raises ``BudgetExhausted`` (nothing reserved)."""
        got: str = await self.reserves.submit((scopes, amount, period))
        return got

    async def lease(
        self,
        scopes: Sequence[Scope],
        amount: Usage,
        period: str,
        most: int,
        release: tuple[str, Usage] | None,
    ) -> tuple[str, int]:
        """A lease of up to ``most`` times ``amount`` (its id and size; 1: a plain
        reservation), after settling ``release``; raises ``BudgetExhausted``."""
        got: tuple[str, int] = await self.leases.submit((scopes, amount, period, most, release))
        return got

    async def settle_and_save(self, reservation: str | None, actual: Usage, run: StoredRun) -> None:
        await self.settles.submit((reservation, actual, run))

    async def settle(self, reservation: str, actual: Usage) -> None:
        """An unstarted run's reservation given back (rare: not batched)."""
        await anyio.to_thread.run_sync(self.store.settle, reservation, actual)


__all__ = ["BudgetExhausted", "GroupCommit", "Ledger"]
