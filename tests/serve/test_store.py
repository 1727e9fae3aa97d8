"""The SQLite store: the ledger never overshoots (a property over operation sequences, and
several processes racing on one file), and runs come back filtered and whole."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from servekit import PostgresCluster

from loomc.store import BudgetExhausted, RunFilter, Scope, StoredRun, StoreError, open_store
from loomc.store.base import from_nano
from loomc.store.sqlite import SQLiteStore
from loomc.units import Budget, Dimension, Usage

ROOT = Path(__file__).resolve().parents[2]


amounts = st.tuples(st.integers(0, 4), st.decimals("0", "2", places=3))
ops = st.lists(st.tuples(amounts, st.booleans(), st.floats(0, 1)), max_size=30)


@settings(max_examples=60, deadline=None)
@given(ops=ops, calls=st.integers(0, 12), credits=st.decimals("0", "5", places=2))
def test_ledger_never_passes_a_ceiling(
    ops: list[tuple[tuple[int, Decimal], bool, float]], calls: int, credits: Decimal
) -> None:
    store = SQLiteStore(":memory:")
    scope = Scope("key:k", Budget(calls=calls, credits=credits))
    held: list[tuple[str, Usage]] = []
    for (n, c), settle, fraction in ops:
        amount = Usage(calls=n, credits=c)
        before = store.spent("key:k", "d")
        fits = before.calls + n <= calls and before.credits + c <= credits
        try:
            held.append((store.reserve([scope], amount, "d"), amount))
            assert fits
        except BudgetExhausted as exc:
            assert not fits
            assert exc.dimension in (Dimension.CALLS, Dimension.CREDITS)
            assert store.spent("key:k", "d") == before  # a refusal reserves nothing
        if settle and held:
            reservation, reserved = held.pop(0)
            used = Usage(
                calls=int(reserved.calls * fraction),
                credits=(reserved.credits * Decimal(fraction)).quantize(Decimal("0.001")),
            )
            store.settle(reservation, used)
        spent = store.spent("key:k", "d")
        assert spent.calls <= calls and spent.credits <= credits
    store.close()


def test_scopes_and_periods_are_separate_and_reservations_span_all_scopes(url: str) -> None:
    store = open_store(url)
    key, server = Scope("key:a", Budget(calls=5)), Scope("global", Budget(calls=3))
    store.reserve([key, server], Usage(calls=3), "2026-12-03")
    with pytest.raises(BudgetExhausted) as refused:
        store.reserve([key, server], Usage(calls=1), "2026-12-03")
    assert refused.value.scope == "global"
    assert store.spent("key:a", "2026-12-03").calls == 3  # nothing booked by the refusal
    store.reserve([key, server], Usage(calls=3), "2026-12-04")  # a new day
    store.close()


def _race(path: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    store = open_store(path)
    won = 0
    scope = Scope("global", Budget(calls=120, cost=Decimal("1.20")))
    for _ in range(80):
        try:
            store.reserve([scope], Usage(calls=1, cost=Decimal("0.01")), "d")
            won += 1
        except BudgetExhausted:
            pass
    store.close()
    out.put(won)


def test_processes_racing_on_one_store_reserve_exactly_the_budget(url: str) -> None:
    path = url
    open_store(path).close()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_race, args=(path, out)) for _ in range(2)]
    for p in procs:
        p.start()
    won = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert sum(won) == 120  # 160 attempts, exactly the budget granted
    opened = open_store(path)
    spent = opened.spent("global", "d")
    opened.close()
    assert spent.calls == 120 and spent.cost == Decimal("1.2")


def _run(run_id: str, ts: float, pipeline: str, tier: str | None, key: str | None) -> StoredRun:
    return StoredRun(
        run_id=run_id,
        ts=ts,
        pipeline=pipeline,
        tier=tier,
        key=key,
        source="serve",
        stop_reason="completed",
        calls=1,
        tokens=10,
        credits=None,
        cost="0",
        elapsed_ms=5,
        receipt_hash="h" + run_id,
        result={"answer": f"<b>{run_id}"},
        events=[{"kind": "run-started"}, {"kind": "run-finished"}],
    )


@pytest.fixture
def filled(url: str) -> str:
    store = open_store(url)
    store.save_run(_run("aaa111", 1_800_000_000, "general", "lean", "ci"))
    store.save_run(_run("bbb222", 1_800_000_100, "general", "strict", None))
    store.save_run(_run("ccc333", 1_800_000_200, "code-review", "lean", "ci"))
    store.close()
    return url


def test_runs_filter_and_come_back_whole(filled: str) -> None:
    store = open_store(filled)
    assert [r.run_id for r in store.runs()] == ["ccc333", "bbb222", "aaa111"]
    assert [r.run_id for r in store.runs(RunFilter(tier="lean", key="ci"))] == ["ccc333", "aaa111"]
    assert [r.run_id for r in store.runs(RunFilter(since=1_800_000_050))] == ["ccc333", "bbb222"]
    assert [r.run_id for r in store.runs(RunFilter(pipeline="general", limit=1))] == ["bbb222"]
    got = store.run("bbb")
    assert got is not None and got.events == [{"kind": "run-started"}, {"kind": "run-finished"}]
    assert store.run("zzz") is None and store.run("") is None  # "" matches all: not unique
    store.close()


def loomc(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'research'}"}
    return subprocess.run(
        [sys.executable, "-m", "loomc", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env=env,
    )


def test_traces_cli_lists_shows_and_exports(filled: str, tmp_path: Path) -> None:
    listed = loomc("traces", "list", "--store", str(filled), "--key", "ci", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [line.count('"run_id"') for line in listed.stdout.splitlines()] == [1, 1]
    shown = loomc("traces", "show", "aaa", "--store", str(filled))
    assert shown.returncode == 0 and '"receipt_hash": "haaa111"' in shown.stdout
    out = tmp_path / "runs.jsonl"
    exported = loomc(
        "traces", "export", "--store", str(filled), "--since", "2027-01-15T08:01", "-o", str(out)
    )
    assert exported.returncode == 0, exported.stderr
    assert [line[:20] for line in out.read_text().splitlines()] == [
        '{"run_id": "ccc333",',
        '{"run_id": "bbb222",',
    ]
    assert '"events": [{"kind": "run-started"}' in out.read_text()
    table = loomc("traces", "list", "--store", str(filled))
    assert "<b>" not in table.stdout and "ccc333" in table.stdout
    missing = loomc("traces", "show", "nope", "--store", str(filled))
    assert missing.returncode == 1 and "no single run" in missing.stderr
    bad = loomc("traces", "list", "--store", str(filled), "--since", "yesterday")
    assert bad.returncode == 2 and "not a time" in bad.stderr
    absent = loomc("traces", "list", "--store", str(tmp_path / "none.db"))
    assert absent.returncode == 1 and "no store" in absent.stderr


def test_store_urls(postgres: PostgresCluster) -> None:
    with pytest.raises(StoreError, match="unknown store URL"):
        open_store("mysql://x")
    with pytest.raises(StoreError) as refused:
        open_store(f"postgresql://loomc:hunter2secret@127.0.0.1:{postgres.port}/no_such_db")
    assert "hunter2secret" not in str(refused.value) and "***" in str(refused.value)


def test_batched_runs_and_settle_with_save_in_one_transaction(url: str) -> None:
    store = open_store(url)
    first = _run("ddd444", 1_800_000_300, "general", "lean", None)
    first.source = "eval"
    store.save_runs([first, _run("eee555", 1_800_000_400, "general", "lean", None)])
    store.save_runs([])
    assert [r.run_id for r in store.runs(RunFilter(source="eval"))] == ["ddd444"]
    assert [r.run_id for r in store.runs(RunFilter(until=1_800_000_350))] == ["ddd444"]
    scope = [Scope("global", Budget(calls=10))]
    reservation = store.reserve(scope, Usage(calls=8), "d")
    store.settle_and_save(reservation, Usage(calls=3), _run("fff666", 1.0, "fixed", None, None))
    assert store.spent("global", "d").calls == 3
    got = store.run("fff666")
    assert got is not None and got.events == [{"kind": "run-started"}, {"kind": "run-finished"}]
    store.settle_and_save(None, Usage(calls=1), _run("ggg777", 2.0, "fixed", None, None))
    assert store.spent("global", "d").calls == 3 and store.run("ggg777") is not None
    store.close()


def _ledger_sums(path: Path) -> dict[tuple[str, str], tuple[int, ...]]:
    import sqlite3

    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT scope, period, SUM(calls), SUM(tokens), SUM(credits), SUM(cost) FROM ledger"
            " GROUP BY scope, period"
        ).fetchall()
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


@settings(max_examples=40, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["reserve", "settle", "settle_and_save", "try_now"]),
            st.integers(0, 5),
            st.integers(0, 400),
            st.decimals("0", "0.5", places=4),
            st.sampled_from(["d1", "d2"]),
        ),
        max_size=25,
    )
)
def test_running_totals_always_equal_the_ledger_summed(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int, Decimal, str]]
) -> None:
    """The reservation reads per-scope running totals kept by triggers; after any sequence of
    reservations and settlements they equal the ledger summed, and `spent` reports them."""
    path = tmp_path_factory.mktemp("totals") / "store.db"
    store = SQLiteStore(path)
    scopes = [Scope("key:k", Budget(calls=30)), Scope("global", Budget(tokens=3000))]
    held: list[str] = []
    for op, calls, tokens, cost, period in ops:
        amount = Usage(calls=calls, tokens=tokens, cost=cost)
        try:
            if op == "reserve":
                held.append(store.reserve(scopes, amount, period))
            elif op == "try_now":
                done, got = store.try_now("reserve", scopes[:1], amount, period)
                assert done  # nothing else holds the file
                held.append(got)
            elif held:
                half = Usage(calls=calls // 2, tokens=tokens // 2, cost=cost / 2)
                if op == "settle":
                    store.settle(held.pop(0), half)
                else:
                    store.settle_and_save(
                        held.pop(0), half, _run(f"{op}{len(held)}", 1.0, "fixed", None, None)
                    )
        except BudgetExhausted:
            pass
    sums = _ledger_sums(path)
    for (scope, period), (c, t, cr, co) in sums.items():
        spent = store.spent(scope, period)
        assert (spent.calls, spent.tokens) == (c, t)
        assert spent.cost == from_nano(co) and spent.credits == from_nano(cr)
    assert store.spent("key:nobody", "d1") == Usage()
    store.close()


def test_a_store_from_before_the_running_totals_is_upgraded_from_its_ledger(
    tmp_path: Path,
) -> None:
    """A store written by a loomc without ``totals`` keeps its day's spending when reopened:
    the totals are filled from the ledger once, so its budget still refuses what it must."""
    import sqlite3

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE ledger (reservation TEXT NOT NULL, scope TEXT NOT NULL, period TEXT"
            " NOT NULL, settled INTEGER NOT NULL DEFAULT 0, calls INTEGER NOT NULL, tokens"
            " INTEGER NOT NULL, credits INTEGER NOT NULL, cost INTEGER NOT NULL, PRIMARY KEY"
            " (reservation, scope));"
            "INSERT INTO ledger VALUES ('r1', 'global', 'd', 1, 6, 10, 0, 0);"
            "INSERT INTO ledger VALUES ('r2', 'global', 'd', 0, 3, 10, 0, 0);"
            "INSERT INTO ledger VALUES ('r3', 'global', 'e', 0, 1, 0, 0, 0);"
        )
    store = SQLiteStore(path)
    assert store.spent("global", "d").calls == 9 and store.spent("global", "e").calls == 1
    with pytest.raises(BudgetExhausted):
        store.reserve([Scope("global", Budget(calls=10))], Usage(calls=2), "d")
    store.settle("r2", Usage(calls=1))
    store.reserve([Scope("global", Budget(calls=10))], Usage(calls=2), "d")
    store.close()
    reopened = SQLiteStore(path)  # the upgrade runs once: reopening changes nothing
    assert reopened.spent("global", "d").calls == 9
    reopened.close()


def test_a_postgres_store_from_before_the_running_totals_is_upgraded(
    postgres: PostgresCluster,
) -> None:
    """As for SQLite: a PostgreSQL ledger written before ``loomc_totals`` existed keeps its
    day's spending once the running totals (and their trigger) are added."""
    import psycopg

    url = postgres.fresh("t" + uuid.uuid4().hex[:12])
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            "CREATE TABLE loomc_ledger (reservation TEXT NOT NULL, scope TEXT NOT NULL, period"
            " TEXT NOT NULL, settled BOOLEAN NOT NULL DEFAULT FALSE, calls BIGINT NOT NULL,"
            " tokens BIGINT NOT NULL, credits BIGINT NOT NULL, cost BIGINT NOT NULL,"
            " PRIMARY KEY (reservation, scope))"
        )
        db.execute(
            "INSERT INTO loomc_ledger VALUES ('r1', 'global', 'd', TRUE, 6, 10, 0, 0),"
            " ('r2', 'global', 'd', FALSE, 3, 10, 0, 0), ('r3', 'global', 'e', FALSE, 1, 0, 0, 0)"
        )
    store = open_store(url)
    assert store.spent("global", "d").calls == 9 and store.spent("global", "e").calls == 1
    with pytest.raises(BudgetExhausted):
        store.reserve([Scope("global", Budget(calls=10))], Usage(calls=2), "d")
    store.settle("r2", Usage(calls=1))
    store.reserve([Scope("global", Budget(calls=10))], Usage(calls=2), "d")
    store.close()
    reopened = open_store(url)  # the trigger exists now: no second backfill, same totals
    assert reopened.spent("global", "d").calls == 9
    reopened.close()


def test_a_reservation_costs_the_same_on_a_busy_day(tmp_path: Path) -> None:
    """A reservation must not re-read the day's ledger: SQLite's virtual-machine steps for one
    reservation are counted (a progress handler, deterministic, unlike a timing) on a ledger
    holding 10 reservations of the day and on one holding 20,000."""
    import sqlite3

    scopes = [Scope("key:k", Budget(calls=10**9)), Scope("global", Budget(calls=10**9))]
    steps: list[int] = []
    for rows in (10, 20_000):
        path = tmp_path / f"day-{rows}.db"
        store = SQLiteStore(path)
        with sqlite3.connect(path) as db:
            db.executemany(
                "INSERT INTO ledger (reservation, scope, period, settled, calls, tokens,"
                " credits, cost) VALUES (?, ?, 'd', 1, 1, 0, 0, 0)",
                ((f"r{i}", s.name) for i in range(rows) for s in scopes),
            )
        count = [0]

        def tick(count: list[int] = count) -> int:
            count[0] += 1
            return 0

        store._db.set_progress_handler(tick, 50)
        store.reserve(scopes, Usage(calls=1), "d")
        store._db.set_progress_handler(None, 0)
        assert store.spent("global", "d").calls == rows + 1
        steps.append(count[0])
        store.close()
    assert steps[1] <= 2 * steps[0] + 10, steps  # a deeper index, never a scan of the day


def test_sqlite_durability_is_normal_unless_full_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / "normal.db")
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    store.close()
    monkeypatch.setenv("LOOMC_SQLITE_SYNC", "full")
    store = SQLiteStore(tmp_path / "full.db")
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store._now.execute("PRAGMA synchronous").fetchone()[0] == 2
    store.close()
