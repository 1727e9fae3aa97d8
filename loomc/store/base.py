"""The store's contract: stored runs (with events and receipt) and a shared budget ledger.

A server answers many requests, possibly in several processes behind one load balancer; budgets
per key and for the whole server must hold across all of them. The ledger therefore lives in the
store, and a reservation is one transaction: read what the period has used and reserved, check
every ceiling, insert the reservation — or refuse. After the run the reservation is settled to
what was actually used, so the sum of settled and open reservations never passes a ceiling.

Amounts are kept as integers of ``NANO`` units (credits and USD), rounded up: a fraction of a
nano-dollar is booked as a whole one, which can only refuse early, never overshoot.

A reservation may be a *lease* (``lease_many``): ``n`` times a run's worst case in one ledger
row, which a server then books runs against in memory (``loomc/serve/leases.py``). It is sized
by what is left under every ceiling, so it never passes one: at most ``1 / LEASE_SHARE`` of
what is left, and a single reservation (``n = 1``) when that is under two runs' worth. A lease
is settled like any reservation (to what its runs used); one never settled — its process
crashed — stays booked whole: it can only refuse early, never overshoot.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any, Protocol

from loomc.errors import LoomcError
from loomc.units import Budget, Dimension, Usage

NANO = Decimal(1_000_000_000)
# The ledger's dimensions: latency is a per-run ceiling, never a period budget.
LEDGER_DIMENSIONS = (Dimension.CALLS, Dimension.TOKENS, Dimension.CREDITS, Dimension.COST)


def to_nano(amount: Decimal) -> int:
    return int((amount * NANO).to_integral_value(ROUND_CEILING))


def from_nano(amount: int) -> Decimal:
    return (Decimal(amount) / NANO).normalize() if amount else Decimal(0)


_DAY: list[tuple[int, str]] = [(-1, "")]  # the last UTC day asked for: number since 1970, text


def today() -> str:
    """The current budget period: the UTC day."""
    return period(time.time())


def period(at: float) -> str:
    """The budget period (UTC day, ``YYYY-MM-DD``) of the POSIX time ``at``. Asked on every
    served request: the text is kept for the day it names (a ``datetime`` and ``strftime`` each
    time cost ~1.8 µs; POSIX time has 86,400 seconds a day, so the day is a division)."""
    day = int(at // 86400)
    kept, text = _DAY[0]  # one tuple: a thread never sees one day's number with another's text
    if day != kept:
        text = dt.datetime.fromtimestamp(day * 86400, dt.UTC).strftime("%Y-%m-%d")
        _DAY[0] = (day, text)
    return text


class StoreError(LoomcError):
    """The store cannot be opened or written (a bad URL, a missing driver, a locked file)."""


class BudgetExhausted(LoomcError):
    """A period budget cannot cover the run's worst case: nothing was sent."""

    def __init__(
        self, scope: str, dimension: Dimension, limit: Decimal, used: Decimal, asked: Decimal
    ) -> None:
        self.scope = scope
        self.dimension = dimension
        self.limit, self.used, self.asked = limit, used, asked
        super().__init__(
            f"{scope} daily {dimension} budget exhausted: {used} of {limit} used or reserved, "
            f"this run may need {asked}"
        )


@dataclass(frozen=True, slots=True)
class Scope:
    """A budget holder (``key:NAME`` or ``global``) and its ceilings for one period."""

    name: str
    limits: Budget


@dataclass
class StoredRun:
    run_id: str
    ts: float
    pipeline: str
    tier: str | None
    key: str | None
    source: str  # serve | run | eval
    stop_reason: str
    calls: int
    tokens: int
    credits: str | None
    cost: str | None
    elapsed_ms: int
    receipt_hash: str
    result: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The row without its result and events: what `loomc traces list` shows."""
        return {
            "run_id": self.run_id,
            "ts": self.ts,
            "pipeline": self.pipeline,
            "tier": self.tier,
            "key": self.key,
            "source": self.source,
            "stop_reason": self.stop_reason,
            "calls": self.calls,
            "tokens": self.tokens,
            "credits": self.credits,
            "cost": self.cost,
            "elapsed_ms": self.elapsed_ms,
            "receipt_hash": self.receipt_hash,
        }

    def to_json(self) -> dict[str, Any]:
        return {**self.summary(), "result": self.result, "events": self.events}


@dataclass(frozen=True, slots=True)
class RunFilter:
    pipeline: str | None = None
    tier: str | None = None
    key: str | None = None
    since: float | None = None  # unix seconds
    limit: int | None = None
    source: str | None = None  # serve | run | eval
    until: float | None = None  # unix seconds, exclusive

    def clauses(self, mark: str) -> tuple[str, list[Any]]:
        """The SQL ``WHERE`` (or ``""``) and its arguments; ``mark`` is the driver's placeholder."""
        parts: list[str] = []
        args: list[Any] = []
        for column in ("pipeline", "tier", "key", "source"):
            value = getattr(self, column)
            if value is not None:
                parts.append(f"{column} = {mark}")
                args.append(value)
        if self.since is not None:
            parts.append(f"ts >= {mark}")
            args.append(self.since)
        if self.until is not None:
            parts.append(f"ts < {mark}")
            args.append(self.until)
        return ("WHERE " + " AND ".join(parts)) if parts else "", args


# what ``json.dumps(x, default=str, separators=(",", ":"))`` writes, with one encoder for every
# row (``json.dumps`` builds a new one per call when given options: ~1 µs of a served request's
# five rows each)
_ROW_JSON = json.JSONEncoder(default=str, separators=(",", ":"))


def run_rows(
    runs: Sequence[StoredRun | None],
) -> tuple[list[tuple[Any, ...]], list[tuple[str, int, str]]]:
    """The rows to insert, serialised before the lock is taken (None: no run)."""
    kept = [r for r in runs if r is not None]
    encode = _ROW_JSON.encode
    rows = [
        (
            r.run_id, r.ts, r.pipeline, r.tier, r.key, r.source, r.stop_reason, r.calls,
            r.tokens, r.credits, r.cost, r.elapsed_ms, r.receipt_hash, encode(r.result),
        )
        for r in kept
    ]  # fmt: skip
    events = [(r.run_id, i, encode(e)) for r in kept for i, e in enumerate(r.events)]
    return rows, events


def usage_row(usage: Usage) -> tuple[int, int, int, int]:
    return usage.calls, usage.tokens, to_nano(usage.credits), to_nano(usage.cost)


def caps(scope: Scope) -> list[tuple[int, Dimension, int]]:
    """``scope``'s ceilings as (dimension index, dimension, cap in ledger units)."""
    out = []
    for i, dim in enumerate(LEDGER_DIMENSIONS):
        limit = scope.limits.get(dim)
        if limit is not None:
            out.append((i, dim, to_nano(Decimal(limit)) if i >= 2 else int(limit)))
    return out


def check_scope(scope: Scope, used: tuple[int, int, int, int], asked: Usage) -> None:
    """Raise ``BudgetExhausted`` when ``used + asked`` passes any of ``scope``'s ceilings."""
    want = usage_row(asked)
    for i, dim, cap in caps(scope):
        if used[i] + want[i] > cap:

            def scale(value: int, money: bool = i >= 2) -> Decimal:
                return from_nano(value) if money else Decimal(value)

            raise BudgetExhausted(scope.name, dim, scale(cap), scale(used[i]), scale(want[i]))


# A lease is this share of what is left at most, and is a single reservation when that share
# is under two runs' worth: far from every ceiling a server reserves in blocks; near one, exactly.
LEASE_SHARE = 8


def lease_units(
    scopes: Sequence[Scope], used: Sequence[tuple[int, int, int, int]], amount: Usage, most: int
) -> int:
    """How many times ``amount`` a lease reserves (``used``: each scope's totals), at most
    ``most``; the caller has checked that one fits. 1 means a plain reservation."""
    if most <= 1:
        return 1
    want = usage_row(amount)
    fits = most * LEASE_SHARE
    for scope, spent in zip(scopes, used, strict=True):
        for i, _, cap in caps(scope):
            if want[i] > 0:
                fits = min(fits, (cap - spent[i]) // want[i])
    units = fits // LEASE_SHARE
    return min(most, units) if units >= 2 else 1


Ask = tuple[Sequence[Scope], Usage, str]  # scopes, amount, period: one reservation
# scopes, a run's amount, period, the most runs' worth to lease, and a lease to settle first
# (its id and what it keeps booked) in the same transaction
LeaseAsk = tuple[Sequence[Scope], Usage, str, int, tuple[str, Usage] | None]
Leased = tuple[str, int]  # the reservation's id, how many times the amount it holds
# reservation, what was used, the stored run (None: a settlement alone, as a lease's)
Finished = tuple[str | None, Usage, StoredRun | None]


class Store(Protocol):
    """What the server, `loomc run --store` and `loomc traces` need from a backend."""

    url: str

    def reserve(self, scopes: Sequence[Scope], amount: Usage, period: str) -> str:
        """Atomically reserve ``amount`` in every scope for ``period``, or raise
        ``BudgetExhausted`` (nothing reserved). Returns the reservation id."""
        ...

    def settle(self, reservation: str, actual: Usage) -> None:
        """Replace the reservation by what was actually used (books it)."""
        ...

    def spent(self, scope: str, period: str) -> Usage:
        """Used plus still-reserved amounts of ``scope`` in ``period``."""
        ...

    def save_run(self, run: StoredRun) -> None: ...

    def save_runs(self, runs: Sequence[StoredRun]) -> None:
        """Many runs in one transaction (an eval's batch): one fsync instead of one each."""
        ...

    def settle_and_save(self, reservation: str | None, actual: Usage, run: StoredRun) -> None:
        """Settle ``reservation`` (when there is one) and store ``run`` in one transaction: one
        trip to the database per served request instead of two."""
        ...

    def reserve_many(self, asks: Sequence[Ask]) -> list[str | BudgetExhausted]:
        """Several reservations in one transaction (a server's group commit), each checked
        against the totals left by the ones before it: per ask, its id or its refusal."""
        ...

    def settle_and_save_many(self, finished: Sequence[Finished]) -> None:
        """Several ``settle_and_save`` in one transaction: all of them or none."""
        ...

    def lease_many(self, asks: Sequence[LeaseAsk]) -> list[Leased | BudgetExhausted]:
        """``reserve_many`` for leases: each ask first settles the lease it gives back (when
        it names one), then reserves ``lease_units`` times its amount, in one transaction."""
        ...

    def runs(self, where: RunFilter | None = None) -> list[StoredRun]:
        """Newest first, without events."""
        ...

    def run(self, run_id: str) -> StoredRun | None:
        """One run with its events; ``run_id`` may be a unique prefix."""
        ...

    def close(self) -> None: ...
