"""The embedded store: one SQLite file in WAL mode, shared safely by threads and processes.

A reservation runs under ``BEGIN IMMEDIATE``: SQLite takes the database's write lock before the
read, so no other connection — in this process or another one on the same file — can reserve
between our check and our insert. ``busy_timeout`` makes competitors wait instead of failing.

A reservation costs the same on the millionth request of a day as on the first: triggers keep a
running total per scope and period (``totals``) as ledger rows are inserted, settled or deleted,
in the same transaction, so the check reads one row per scope instead of summing the day's
ledger. Stores made before ``totals`` existed get it filled from the ledger when first opened.

Durability: WAL with ``synchronous=NORMAL``: a commit is atomic and survives a crash of the
process, but a power loss or an OS crash may lose the transactions since the last checkpoint
(never corrupt the file). For the ledger that can only forget some of the day's latest spending
and stored runs; ``LOOMC_SQLITE_SYNC=FULL`` makes every commit wait for an fsync instead.

Two connections per store object, each guarded by a lock: one waits for the file's write lock
(callers run its methods in worker threads), the other never waits (``try_now``, called on an
event loop, where a wait would stall every request).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
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
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, ts REAL NOT NULL, pipeline TEXT NOT NULL, tier TEXT, key TEXT,
  source TEXT NOT NULL, stop_reason TEXT NOT NULL, calls INTEGER NOT NULL, tokens INTEGER NOT NULL,
  credits TEXT, cost TEXT, elapsed_ms INTEGER NOT NULL, receipt_hash TEXT NOT NULL,
  result TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_ts ON runs (ts);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS ledger (
  reservation TEXT NOT NULL, scope TEXT NOT NULL, period TEXT NOT NULL,
  settled INTEGER NOT NULL DEFAULT 0, calls INTEGER NOT NULL, tokens INTEGER NOT NULL,
  credits INTEGER NOT NULL, cost INTEGER NOT NULL, PRIMARY KEY (reservation, scope)
);
CREATE INDEX IF NOT EXISTS ledger_scope ON ledger (scope, period);
CREATE TABLE IF NOT EXISTS totals (
  scope TEXT NOT NULL, period TEXT NOT NULL, calls INTEGER NOT NULL, tokens INTEGER NOT NULL,
  credits INTEGER NOT NULL, cost INTEGER NOT NULL, PRIMARY KEY (scope, period)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS ledger_reserved AFTER INSERT ON ledger BEGIN
  INSERT INTO totals (scope, period, calls, tokens, credits, cost)
  VALUES (NEW.scope, NEW.period, NEW.calls, NEW.tokens, NEW.credits, NEW.cost)
  ON CONFLICT (scope, period) DO UPDATE SET calls = calls + excluded.calls,
    tokens = tokens + excluded.tokens, credits = credits + excluded.credits,
    cost = cost + excluded.cost;
END;
CREATE TRIGGER IF NOT EXISTS ledger_settled AFTER UPDATE ON ledger BEGIN
  UPDATE totals SET calls = calls - OLD.calls + NEW.calls, tokens = tokens - OLD.tokens
    + NEW.tokens, credits = credits - OLD.credits + NEW.credits, cost = cost - OLD.cost + NEW.cost
  WHERE scope = OLD.scope AND period = OLD.period;
END;
CREATE TRIGGER IF NOT EXISTS ledger_deleted AFTER DELETE ON ledger BEGIN
  UPDATE totals SET calls = calls - OLD.calls, tokens = tokens - OLD.tokens,
    credits = credits - OLD.credits, cost = cost - OLD.cost
  WHERE scope = OLD.scope AND period = OLD.period;
END;
"""
# Schema versions (``PRAGMA user_version``): 1 added ``totals``, filled once from the ledger.
VERSION = 1
_BACKFILL = """
DELETE FROM totals;
INSERT INTO totals (scope, period, calls, tokens, credits, cost)
  SELECT scope, period, SUM(calls), SUM(tokens), SUM(credits), SUM(cost) FROM ledger
  GROUP BY scope, period;
"""
_SYNC = {"FULL", "NORMAL"}
MMAP_BYTES = 256 * 1024 * 1024  # address space only: the OS pages in what is read

_COLUMNS = (
    "run_id, ts, pipeline, tier, key, source, stop_reason, calls, tokens, credits, cost, "
    "elapsed_ms, receipt_hash, result"
)


class SQLiteStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.url = str(self.path)
        self._lock = threading.Lock()
        self._now_lock = threading.Lock()
        self._here = threading.local()  # `db`: the no-wait connection while `try_now` runs
        sync = os.environ.get("LOOMC_SQLITE_SYNC", "NORMAL").upper()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._connect(30, sync if sync in _SYNC else "NORMAL")
            # a backfill that runs twice (two processes opening a new store) gives the same totals
            old = self._db.execute("PRAGMA user_version").fetchone()[0] < VERSION
            upgrade = _BACKFILL + f"PRAGMA user_version={VERSION};" if old else ""
            with self._tx():
                self._db.executescript("BEGIN IMMEDIATE;" + SCHEMA + upgrade + "COMMIT;")
            if str(path) == ":memory:":  # a second connection would open another database
                self._now, self._now_lock = self._db, self._lock
            else:
                self._now = self._connect(0, sync if sync in _SYNC else "NORMAL")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open store {self.path}: {exc}") from exc

    def _connect(self, timeout: float, sync: str) -> sqlite3.Connection:
        # autocommit mode: every transaction below is explicit
        db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=timeout
        )
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={sync}")
        db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        # pages read through a memory map instead of one pread() each: a served request's
        # reservation and settlement cost ~15% less CPU (325 instead of 390 µs per statement
        # sequence, benchmarks/README.md, serve4); writes still go through the WAL: durability
        # is unchanged
        db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        return db

    @contextmanager
    def _tx(self, begin: str | None = None) -> Iterator[sqlite3.Connection]:
        db: sqlite3.Connection | None = getattr(self._here, "db", None)
        with nullcontext() if db is not None else self._lock:
            db = db or self._db
            if begin is None:
                yield db
                return
            db.execute(begin)
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def try_now(self, method: str, *args: Any) -> tuple[bool, Any]:
        """Call ``method`` right here when it cannot wait: on the no-wait connection, when no
        other connection holds the database's write lock. ``(False, None)`` otherwise, and the
        caller runs it in a worker thread, where it may wait. A server calls this on its event
        loop: an uncontended reservation (~0.1 ms) costs less than a hop to a thread."""
        if not self._now_lock.acquire(blocking=False):
            return False, None
        self._here.db = self._now
        try:
            return True, getattr(self, method)(*args)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return False, None
            raise
        finally:
            self._here.db = None
            self._now_lock.release()

    # --- the ledger -----------------------------------------------------------------------------

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
        out: list[Leased | BudgetExhausted] = []
        with self._tx("BEGIN IMMEDIATE") as db:
            for scopes, amount, period, most, release in asks:
                if release is not None:
                    _settle(db, *release)
                try:
                    # the totals include the asks reserved before this one
                    used = [self._sum(db, scope.name, period) for scope in scopes]
                    for scope, spent in zip(scopes, used, strict=True):
                        check_scope(scope, spent, amount)
                except BudgetExhausted as refused:
                    out.append(refused)
                    continue
                units = lease_units(scopes, used, amount, most)
                reservation, row = uuid.uuid4().hex, [v * units for v in usage_row(amount)]
                db.executemany(
                    "INSERT INTO ledger (reservation, scope, period, calls, tokens, credits, cost)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(reservation, s.name, period, *row) for s in scopes],
                )
                out.append((reservation, units))
        return out

    def settle(self, reservation: str, actual: Usage) -> None:
        with self._tx("BEGIN IMMEDIATE") as db:
            _settle(db, reservation, actual)

    def spent(self, scope: str, period: str) -> Usage:
        with self._tx() as db:
            calls, tokens, credits, cost = self._sum(db, scope, period)
        return Usage(calls=calls, tokens=tokens, credits=from_nano(credits), cost=from_nano(cost))

    @staticmethod
    def _sum(db: sqlite3.Connection, scope: str, period: str) -> tuple[int, int, int, int]:
        got = db.execute(
            "SELECT calls, tokens, credits, cost FROM totals WHERE scope = ? AND period = ?",
            (scope, period),
        ).fetchone()
        return (0, 0, 0, 0) if got is None else (int(got[0]), int(got[1]), int(got[2]), int(got[3]))

    # --- runs -----------------------------------------------------------------------------------

    def save_run(self, run: StoredRun) -> None:
        self.save_runs([run])

    def save_runs(self, runs: Sequence[StoredRun]) -> None:
        if not runs:
            return
        rows, events = run_rows(runs)
        with self._tx("BEGIN IMMEDIATE") as db:
            _insert(db, rows, events)

    def settle_and_save(self, reservation: str | None, actual: Usage, run: StoredRun) -> None:
        self.settle_and_save_many([(reservation, actual, run)])

    def settle_and_save_many(self, finished: Sequence[Finished]) -> None:
        rows, events = run_rows([run for _, _, run in finished])
        with self._tx("BEGIN IMMEDIATE") as db:
            for reservation, actual, _ in finished:
                if reservation is not None:
                    _settle(db, reservation, actual)
            _insert(db, rows, events)

    def runs(self, where: RunFilter | None = None) -> list[StoredRun]:
        where = where or RunFilter()
        clauses, args = where.clauses("?")
        sql = f"SELECT {_COLUMNS} FROM runs {clauses} ORDER BY ts DESC, run_id"
        if where.limit is not None:
            sql += f" LIMIT {int(where.limit)}"
        with self._tx() as db:
            rows = db.execute(sql, args).fetchall()
        return [_stored(r) for r in rows]

    def run(self, run_id: str) -> StoredRun | None:
        pattern = run_id.replace("%", "").replace("_", "") + "%"
        with self._tx() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE run_id LIKE ? LIMIT 2", (pattern,)
            ).fetchall()
            if len(rows) != 1:
                return None
            found = _stored(rows[0])
            events = db.execute(
                "SELECT event FROM events WHERE run_id = ? ORDER BY seq", (found.run_id,)
            ).fetchall()
        found.events = [json.loads(e[0]) for e in events]
        return found

    def close(self) -> None:
        with self._lock:
            self._db.close()
        if self._now is not self._db:
            with self._now_lock:
                self._now.close()


def _settle(db: sqlite3.Connection, reservation: str, actual: Usage) -> None:
    db.execute(
        "UPDATE ledger SET settled = 1, calls = ?, tokens = ?, credits = ?, cost = ?"
        " WHERE reservation = ?",
        (*usage_row(actual), reservation),
    )


def _insert(
    db: sqlite3.Connection, rows: list[tuple[Any, ...]], events: list[tuple[str, int, str]]
) -> None:
    db.executemany(f"INSERT OR REPLACE INTO runs ({_COLUMNS}) VALUES ({', '.join('?' * 14)})", rows)
    db.executemany("DELETE FROM events WHERE run_id = ?", [(r[0],) for r in rows])
    db.executemany("INSERT INTO events (run_id, seq, event) VALUES (?, ?, ?)", events)


def _stored(row: Sequence[Any]) -> StoredRun:
    return StoredRun(
        run_id=row[0],
        ts=row[1],
        pipeline=row[2],
        tier=row[3],
        key=row[4],
        source=row[5],
        stop_reason=row[6],
        calls=row[7],
        tokens=row[8],
        credits=row[9],
        cost=row[10],
        elapsed_ms=row[11],
        receipt_hash=row[12],
        result=json.loads(row[13]),
    )
