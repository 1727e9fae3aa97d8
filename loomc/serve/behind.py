"""Write-behind: stored runs (and leases' settlements) written off the request path, in batches.

A served request used to wait for a transaction that settled its reservation and stored its
run: ~40 % of the server's own CPU per request (benchmarks/README.md, serve5). A run booked
against a lease (``leases.py``), or under no budget at all, has nothing left to make durable
before its response: what it may spend is already held by a committed reservation. Its trace row
can wait: it joins a queue that a background task writes every ``linger`` seconds, as many
items per transaction as arrived meanwhile (one commit for many runs).

What a crash can lose: the rows queued and not yet committed, i.e. the traces of the last
``linger`` seconds (plus the one transaction being written), and the settlements of leases
closed in that time — a lease then stays booked whole, which can only refuse early. Never a
booking: runs that settle an exact reservation still do it before their response ends
(``commits.py``). ``close`` writes everything queued; the queue is bounded (``limit``): past it a
request waits for the next write instead of growing memory without end.
"""

from __future__ import annotations

import logging

import anyio

from loomc.providers.base import redact
from loomc.store import Store
from loomc.store.base import Finished

log = logging.getLogger("loomc.serve")

LINGER_S = 0.02  # batches ~10 requests at one client, ~all of a burst at 128; short for a reader
LIMIT = 1024


class WriteBehind:
    def __init__(self, store: Store, linger: float = LINGER_S, limit: int = LIMIT) -> None:
        self.store, self.linger, self.limit = store, linger, limit
        self._queue: list[Finished] = []
        self._wake = anyio.Event()
        self._written = anyio.Event()
        self._order = anyio.Lock()  # one write at a time: a lease's settlements land in order
        self._closed = False
        self.batches = 0  # written so far, and the items in them (``/metrics``)
        self.items = 0
        self.failed = 0

    async def put(self, item: Finished) -> None:
        """Queue ``item``; returns at once unless the queue is full (then after a write)."""
        self._queue.append(item)
        self._wake.set()
        while len(self._queue) > self.limit and not self._closed:
            await self._written.wait()
        if self._closed and self._queue:
            await self.flush()  # after close (a request still finishing): written here

    async def run(self) -> None:
        """The writer: until ``close``, each wake-up waits ``linger`` then writes the queue."""
        while not self._closed:
            await self._wake.wait()
            self._wake = anyio.Event()
            if not self._closed:
                await anyio.sleep(self.linger)
            await self.flush()

    async def flush(self) -> None:
        with anyio.CancelScope(shield=True):
            async with self._order:  # the batch is taken after the write before it committed
                batch, self._queue = self._queue, []
                if batch:
                    await self._write(batch)
        written, self._written = self._written, anyio.Event()
        written.set()

    async def close(self) -> None:
        """Stop the writer and write what is queued."""
        self._closed = True
        self._wake.set()
        await self.flush()

    async def _write(self, batch: list[Finished]) -> None:
        try:
            now = getattr(self.store, "try_now", None)
            done = False
            if now is not None:
                done, _ = now("settle_and_save_many", batch)
            if not done:
                await anyio.to_thread.run_sync(self.store.settle_and_save_many, batch)
        except Exception as exc:  # the runs' traces are lost, never a booking: logged, counted
            self.failed += len(batch)
            log.error("could not store %d runs: %s", len(batch), redact(repr(exc)))
            return
        self.batches += 1
        self.items += len(batch)
