"""The shared ledger's cost per reservation: SQLite and PostgreSQL, 1 and 128 concurrent (issue 14).

    python benchmarks/serve_ledger.py [N]        # default 2000 reservations per arm

A reservation is what every served request pays before its run: one transaction that sums the
period's usage of each scope, checks every ceiling and inserts the hold (``Store.reserve``).
Arms: SQLite (one WAL file, ``BEGIN IMMEDIATE``) and PostgreSQL (a throwaway cluster started
here in a temporary folder, advisory locks per scope), each by one caller in a loop and by 128
threads each with its own store connection (as 128 server processes or pool slots would be).
All callers reserve against the same two scopes (a key and the global budget): the contended
case. Printed per arm: microseconds per reservation (wall / N) and the p50 / p95 latency of one
reservation as its caller saw it. PostgreSQL is skipped when its binaries or psycopg are absent.

``1 caller, day of 100k``: the same single caller on a store whose ledger already holds 100,000
reservations of the same day in both scopes (a busy day's server): the cost of a reservation
must not grow with the day's traffic. ``SQLITE_ONLY=1`` skips PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from loomc.store import Scope, Store, open_store
from loomc.units import Budget, Usage

SCOPES = [Scope("key:bench", Budget(calls=10**12)), Scope("global", Budget(calls=10**12))]


def pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parts[-3])
    return found[-1].parent if found else None


class Postgres:
    """A throwaway cluster (trust auth on 127.0.0.1, fsync off as in the tests)."""

    def __init__(self, binaries: Path) -> None:
        self.bin = binaries
        self.folder = Path(tempfile.mkdtemp(prefix="loomc-pg-bench-"))
        self.run_as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
            self.run_as = ["runuser", "-u", "postgres", "--"]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._pg("initdb", "-D", str(self.folder / "data"), "-A", "trust", "-U", "loomc")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
        options += "-c max_connections=300 -c fsync=off"
        data, log = str(self.folder / "data"), str(self.folder / "log")
        self._pg("pg_ctl", "-D", data, "-l", log, "-w", "-o", options, "start")
        self.url = f"postgresql://loomc@127.0.0.1:{self.port}/postgres"

    def _pg(self, tool: str, *args: str) -> None:
        subprocess.run([*self.run_as, str(self.bin / tool), *args], check=True, capture_output=True)

    def stop(self) -> None:
        self._pg("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def one_caller(store: Store, n: int) -> tuple[float, list[float]]:
    times = []
    start = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        store.reserve(SCOPES, Usage(calls=1), "d")
        times.append(time.perf_counter() - t)
    return time.perf_counter() - start, times


def many_callers(url: str, n: int, threads: int) -> tuple[float, list[float]]:
    stores = [open_store(url) for _ in range(threads)]
    times: list[float] = []
    lock = threading.Lock()
    per = max(1, n // threads)
    gate = threading.Barrier(threads + 1)

    def work(store: Store) -> None:
        mine = []
        gate.wait()
        for _ in range(per):
            t = time.perf_counter()
            store.reserve(SCOPES, Usage(calls=1), "d")
            mine.append(time.perf_counter() - t)
        with lock:
            times.extend(mine)

    workers = [threading.Thread(target=work, args=(s,)) for s in stores]
    for w in workers:
        w.start()
    gate.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    wall = time.perf_counter() - start
    for s in stores:
        s.close()
    return wall, times


def prefill(url: str, rows: int) -> None:
    """``rows`` settled reservations of day ``d`` in both scopes, written straight to the store's
    ledger table (its triggers, where it has them, see the rows as any write)."""
    if url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            # triggers off for this bulk load (one running total updated 100k times in one
            # transaction piles up row versions); the totals are then summed once, as an upgrade
            pg.execute("SET session_replication_role = replica")
            for scope in SCOPES:
                pg.execute(
                    "INSERT INTO loomc_ledger (reservation, scope, period, settled, calls, tokens,"
                    " credits, cost) SELECT 'pre' || g, %s, 'd', TRUE, 1, 0, 0, 0"
                    " FROM generate_series(1, %s) g",
                    (scope.name, rows),
                )
            if pg.execute("SELECT to_regclass('loomc_totals')").fetchone() != (None,):
                pg.execute("DELETE FROM loomc_totals")
                pg.execute(
                    "INSERT INTO loomc_totals SELECT scope, period, SUM(calls), SUM(tokens),"
                    " SUM(credits), SUM(cost) FROM loomc_ledger GROUP BY scope, period"
                )
            pg.execute("ANALYZE")
        return
    import sqlite3

    with sqlite3.connect(url) as db:
        db.executemany(
            "INSERT INTO ledger (reservation, scope, period, settled, calls, tokens, credits,"
            " cost) VALUES (?, ?, 'd', 1, 1, 0, 0, 0)",
            ((f"pre{i}", scope.name) for i in range(rows) for scope in SCOPES),
        )


def line(name: str, wall: float, times: list[float]) -> str:
    ordered = sorted(times)
    p50 = ordered[len(ordered) // 2] * 1e6
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1e6
    return (
        f"{name:22s} {wall / len(times) * 1e6:9.1f} us/reservation  "
        f"one's latency p50 {p50:9.1f} us  p95 {p95:9.1f} us  ({len(times)} reservations)"
    )


def main(n: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="loomc-ledger-bench-"))
    urls = {"sqlite": str(folder / "ledger.db")}
    cluster = None
    binaries = pg_bin()
    try:
        import psycopg  # noqa: F401
    except ImportError:
        binaries = None
    if binaries is not None and not os.environ.get("SQLITE_ONLY"):
        cluster = Postgres(binaries)
        urls["postgresql"] = cluster.url
    try:
        for name, url in urls.items():
            store = open_store(url)
            store.reserve(SCOPES, Usage(calls=1), "d")  # schema and warm connection
            print(line(f"{name}, 1 caller", *one_caller(store, n)))
            store.close()
            print(line(f"{name}, 128 threads", *many_callers(url, n, 128)))
            store = open_store(url)  # the same store, now with a busy day behind it
            prefill(url, 100_000)
            print(line(f"{name}, 1 caller, day of 100k", *one_caller(store, min(n, 300))))
            store.close()
        if cluster is None:
            print("postgresql: skipped (no PostgreSQL binaries or psycopg here)")
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
