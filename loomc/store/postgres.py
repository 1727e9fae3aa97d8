"""The PostgreSQL store: the same contract as SQLite for servers that outgrow one machine.

Any number of replicas behind any load balancer share budgets through one database. A
reservation is one transaction that first takes a transaction-scoped advisory lock per scope (in
a fixed order, so two reservations never deadlock), then sums, checks and inserts: concurrent
reservations on one scope are serialised, other scopes are not held up. ``psycopg`` (v3) is
imported only when a ``postgresql://`` store is opened.

As in SQLite, a trigger keeps a running total per scope and period (``loomc_totals``) in the
transaction that inserts, settles or deletes ledger rows, so a reservation reads one row per
scope (all in one query) instead of summing the day's ledger. Ledger rows are written in scope
order and a reservation's rows are settled in its primary key's order (scope order too), so two
transactions lock totals rows in the same order and never deadlock on them.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from loomc.store.base import (
    Ask,
    BudgetExhausted,
    Finished,
    LeaseAsk,
    Leased,
    RunFilter,
    Scope,
    StoredRun,
    StoreError,
    check_scope,
    from_nano,
    lease_units,
    run_rows,
    usage_row,
)
from loomc.units import Usage

SCHEMA = """
CREATE TABLE IF NOT EXISTS loomc_runs (
  run_id TEXT PRIMARY KEY, ts DOUBLE PRECISION NOT NULL, pipeline TEXT NOT NULL, tier TEXT,
  key TEXT, source TEXT NOT NULL, stop_reason TEXT NOT NULL, calls BIGINT NOT NULL,
  tokens BIGINT NOT NULL, credits TEXT, cost TEXT, elapsed_ms BIGINT NOT NULL,
  receipt_hash TEXT NOT NULL, result TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS loomc_runs_ts ON loomc_runs (ts);
CREATE TABLE IF NOT EXISTS loomc_events (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS loomc_ledger (
  reservation TEXT NOT NULL, scope TEXT NOT NULL, period TEXT NOT NULL,
  settled BOOLEAN NOT NULL DEFAULT FALSE, calls BIGINT NOT NULL, tokens BIGINT NOT NULL,
  credits BIGINT NOT NULL, cost BIGINT NOT NULL, PRIMARY KEY (reservation, scope)
);
CREATE INDEX IF NOT EXISTS loomc_ledger_scope ON loomc_ledger (scope, period);
CREATE TABLE IF NOT EXISTS loomc_totals (
  scope TEXT NOT NULL, period TEXT NOT NULL, calls BIGINT NOT NULL, tokens BIGINT NOT NULL,
  credits BIGINT NOT NULL, cost BIGINT NOT NULL, PRIMARY KEY (scope, period)
);
"""
_TOTALS_FUNCTION = """
CREATE OR REPLACE FUNCTION loomc_ledger_totals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE loomc_totals SET calls = calls - OLD.calls, tokens = tokens - OLD.tokens,
      credits = credits - OLD.credits, cost = cost - OLD.cost
    WHERE scope = OLD.scope AND period = OLD.period;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO loomc_totals AS t (scope, period, calls, tokens, credits, cost)
    VALUES (NEW.scope, NEW.period, NEW.calls, NEW.tokens, NEW.credits, NEW.cost)
    ON CONFLICT (scope, period) DO UPDATE SET calls = t.calls + EXCLUDED.calls,
      tokens = t.tokens + EXCLUDED.tokens, credits = t.credits + EXCLUDED.credits,
      cost = t.cost + EXCLUDED.cost;
  END IF;
  RETURN NULL;
END $$
"""
# created once, before the backfill: creating it waits for (and then holds off) every writer
# of the ledger until the schema transaction commits, so the backfill misses no row
_TOTALS_TRIGGER = (
    "CREATE TRIGGER loomc_ledger_totals AFTER INSERT OR UPDATE OR DELETE ON loomc_ledger"
    " FOR EACH ROW EXECUTE FUNCTION loomc_ledger_totals()"
)
_BACKFILL = (
    "INSERT INTO loomc_totals (scope, period, calls, tokens, credits, cost)"
    " SELECT scope, period, SUM(calls), SUM(tokens), SUM(credits), SUM(cost) FROM loomc_ledger"
    " GROUP BY scope, period"
)

_COLUMNS = (
    "run_id, ts, pipeline, tier, key, source, stop_reason, calls, tokens, credits, cost, "
    "elapsed_ms, receipt_hash, result"
)
_SCHEMA_LOCK = 0x6C6F6F6D  # an advisory lock so replicas starting together create tables once


class PostgresStore:
    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                "a postgresql:// store needs psycopg: pip install 'loomc[postgres]'"
            ) from None
        self.url = _safe(url)
        self._lock = threading.Lock()
        try:
            self._db = psycopg.connect(url, autocommit=False)
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                found = self._db.execute(
                    "SELECT 1 FROM pg_trigger WHERE tgname = 'loomc_ledger_totals'"
                ).fetchone()
                # the trigger is made last: with it the schema is whole, and the DDL is skipped
                # (`CREATE INDEX IF NOT EXISTS` still takes a share lock on its table, which
                # deadlocked a replica starting while another one settled runs)
                if found is None:  # a new store, or one from before the running totals
                    for statement in filter(str.strip, SCHEMA.split(";")):
                        self._db.execute(statement)
                    self._db.execute(_TOTALS_FUNCTION)
                    self._db.execute(_TOTALS_TRIGGER)
                    self._db.execute("DELETE FROM loomc_totals")
                    self._db.execute(_BACKFILL)
        except psycopg.Error as exc:
            # psycopg adds a hint on its own line: one line, so the CLI prints one-line errors
            reason = " ".join(str(exc).split())
            raise StoreError(f"cannot open store {self.url}: {reason}") from None

    def reserve(self, scopes: Sequence[Scope], amount: Usage, period: str) -> str:
        got = self.reserve_many([(scopes, amount, period)])[0]
        if isinstance(got, BudgetExhausted):
            raise got
        return got

    def reserve_many(self, asks: Sequence[Ask]) -> list[str | BudgetExhausted]:
        got = self.lease_many(
            [(scopes, amount, period, 1, None) for scopes, amount, period in asks]
        )
        return [g if isinstance(g, BudgetExhausted) else g[0] for g in got]

    def lease_many(self, asks: Sequence[LeaseAsk]) -> list[Leased | BudgetExhausted]:
        """One transaction: every scope of every ask locked once (in name order), the leases
        given back settled, the totals read in one round trip, then each ask checked against
        them plus the asks before it."""
        out: list[Leased | BudgetExhausted] = []
        rows: list[tuple[Any, ...]] = []
        with self._lock, self._db.transaction():
            names = sorted({s.name for ask in asks for s in ask[0]})
            for name in names:
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (name,))
            released = [ask[4] for ask in asks if ask[4] is not None]
            if released:
                self._lock_totals([r for r, _ in released])
                for reservation, keep in released:
                    self._settle(reservation, keep)
            totals: dict[tuple[str, str], tuple[int, int, int, int]] = {}
            for period in {ask[2] for ask in asks}:
                for name, used in self._totals(names, period).items():
                    totals[name, period] = used
            for scopes, amount, period, most, _ in asks:
                now = [totals.get((scope.name, period), (0, 0, 0, 0)) for scope in scopes]
                try:
                    for scope, spent in zip(scopes, now, strict=True):
                        check_scope(scope, spent, amount)
                except BudgetExhausted as refused:
                    out.append(refused)
                    continue
                units = lease_units(scopes, now, amount, most)
                reservation = uuid.uuid4().hex
                row = tuple(v * units for v in usage_row(amount))
                for scope, spent in zip(scopes, now, strict=True):
                    totals[scope.name, period] = (
                        spent[0] + row[0], spent[1] + row[1], spent[2] + row[2], spent[3] + row[3]
                    )  # fmt: skip
                rows += [(reservation, s.name, period, *row) for s in scopes]
                out.append((reservation, units))
            # in scope order, as every writer of the ledger does: totals rows lock in one order
            rows.sort(key=lambda r: (r[1], r[2]))
            if rows:
                with self._db.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO loomc_ledger (reservation, scope, period, calls, tokens,"
                        " credits, cost) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        rows,
                    )
        return out

    def _lock_totals(self, reservations: list[str]) -> None:
        """The totals rows these reservations will update, locked in (scope, period) order:
        settling reservations of several keys one by one would lock them in a mixed order, and
        two replicas' transactions could deadlock."""
        self._db.execute(
            "SELECT 1 FROM loomc_totals WHERE (scope, period) IN (SELECT scope, period"
            " FROM loomc_ledger WHERE reservation = ANY(%s))"
            " ORDER BY scope, period FOR UPDATE",
            (reservations,),
        )

    def settle(self, reservation: str, actual: Usage) -> None:
        with self._lock, self._db.transaction():
            self._settle(reservation, actual)

    def _settle(self, reservation: str, actual: Usage) -> None:
        self._db.execute(
            "UPDATE loomc_ledger SET settled = TRUE, calls = %s, tokens = %s, credits = %s,"
            " cost = %s WHERE reservation = %s",
            (*usage_row(actual), reservation),
        )

    def spent(self, scope: str, period: str) -> Usage:
        with self._lock, self._db.transaction():
            calls, tokens, credits, cost = self._sum(scope, period)
        return Usage(calls=calls, tokens=tokens, credits=from_nano(credits), cost=from_nano(cost))

    def _sum(self, scope: str, period: str) -> tuple[int, int, int, int]:
        return self._totals([scope], period).get(scope, (0, 0, 0, 0))

    def _totals(self, scopes: list[str], period: str) -> dict[str, tuple[int, int, int, int]]:
        """Used plus reserved per scope of ``period``, in one round trip."""
        rows = self._db.execute(
            "SELECT scope, calls, tokens, credits, cost FROM loomc_totals"
            " WHERE period = %s AND scope = ANY(%s)",
            (period, scopes),
        ).fetchall()
        return {r[0]: (int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows}

    def save_run(self, run: StoredRun) -> None:
        self.save_runs([run])

    def save_runs(self, runs: Sequence[StoredRun]) -> None:
        if not runs:
            return
        rows, events = run_rows(runs)
        with self._lock, self._db.transaction():
            self._insert(rows, events)

    def settle_and_save(self, reservation: str | None, actual: Usage, run: StoredRun) -> None:
        self.settle_and_save_many([(reservation, actual, run)])

    def settle_and_save_many(self, finished: Sequence[Finished]) -> None:
        rows, events = run_rows([run for _, _, run in finished])
        settled = [(r, used) for r, used, _ in finished if r is not None]
        with self._lock, self._db.transaction():
            if len(settled) > 1:
                self._lock_totals([r for r, _ in settled])
            for reservation, actual in settled:
                self._settle(reservation, actual)
            self._insert(rows, events)

    def _insert(self, rows: list[tuple[Any, ...]], events: list[tuple[str, int, str]]) -> None:
        if not rows:
            return  # settlements alone (a lease's)
        with self._db.cursor() as cur:
            cur.executemany(
                f"INSERT INTO loomc_runs ({_COLUMNS}) VALUES ({', '.join(['%s'] * 14)})"
                " ON CONFLICT (run_id) DO NOTHING",
                rows,
            )
            if events:
                cur.executemany(
                    "INSERT INTO loomc_events (run_id, seq, event) VALUES (%s, %s, %s)"
                    " ON CONFLICT DO NOTHING",
                    events,
                )

    def runs(self, where: RunFilter | None = None) -> list[StoredRun]:
        where = where or RunFilter()
        clauses, args = where.clauses("%s")
        sql = f"SELECT {_COLUMNS} FROM loomc_runs {clauses} ORDER BY ts DESC, run_id"
        if where.limit is not None:
            sql += f" LIMIT {int(where.limit)}"
        with self._lock, self._db.transaction():
            rows = self._db.execute(sql, args).fetchall()
        return [_stored(r) for r in rows]

    def run(self, run_id: str) -> StoredRun | None:
        prefix = run_id.replace("\\", "").replace("%", "").replace("_", "")
        with self._lock, self._db.transaction():
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM loomc_runs WHERE run_id LIKE %s LIMIT 2", (prefix + "%",)
            ).fetchall()
            if len(rows) != 1:
                return None
            found = _stored(rows[0])
            events = self._db.execute(
                "SELECT event FROM loomc_events WHERE run_id = %s ORDER BY seq", (found.run_id,)
            ).fetchall()
        found.events = [json.loads(e[0]) for e in events]
        return found

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    head, at, tail = url.rpartition("@")
    if not at or "://" not in head:
        return url
    scheme, _, userinfo = head.partition("://")
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{tail}" if ":" in userinfo else url


def _stored(row: Sequence[Any]) -> StoredRun:
    return StoredRun(
        run_id=row[0], ts=row[1], pipeline=row[2], tier=row[3], key=row[4], source=row[5],
        stop_reason=row[6], calls=row[7], tokens=row[8], credits=row[9], cost=row[10],
        elapsed_ms=row[11], receipt_hash=row[12], result=json.loads(row[13]),
    )  # fmt: skip
