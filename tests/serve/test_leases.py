"""Budget leases and the write-behind queue: blocks far from a ceiling, exact near it, never an
overshoot, nothing left booked once a server stops — on both backends, across two processes,
and through a real server under uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from servekit import KEY_VAR, SECRET, InProcessServer, write_policy

import loomc
from loomc.serve import create_app
from loomc.serve.behind import WriteBehind
from loomc.serve.commits import Ledger
from loomc.serve.leases import Budgets
from loomc.store import BudgetExhausted, Scope, StoredRun, open_store, today
from loomc.store.base import LEASE_SHARE
from loomc.store.sqlite import SQLiteStore
from loomc.units import Budget, Usage

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"authorization": f"Bearer {SECRET}"}


def _run(run_id: str) -> StoredRun:
    return StoredRun(
        run_id, 1.0, "general", "lean", None, "serve", "completed", 1, 10, None, None, 5,
        "h" + run_id, {"answer": run_id}, [{"kind": "run-started"}, {"kind": "run-finished"}],
    )  # fmt: skip


def test_a_lease_is_a_share_of_what_is_left_and_single_near_the_ceiling(url: str) -> None:
    store = open_store(url)
    scope = [Scope("key:k", Budget(calls=1000))]
    (first,) = store.lease_many([(scope, Usage(calls=2), "d", 64, None)])
    assert not isinstance(first, BudgetExhausted)
    assert first[1] == 1000 // 2 // LEASE_SHARE == 62  # a share of what is left, not all
    assert store.spent("key:k", "d").calls == 124
    (capped,) = store.lease_many([(scope, Usage(calls=1), "d", 64, None)])
    assert not isinstance(capped, BudgetExhausted) and capped[1] == 64  # at most `most`
    # given back in the transaction of the next one: settled to what it keeps booked
    (third,) = store.lease_many([(scope, Usage(calls=100), "d", 64, (first[0], Usage(calls=7)))])
    assert not isinstance(third, BudgetExhausted)
    assert third[1] == 1  # (1000 - 7 - 64) // 100 = 9 fit: a share is under 2, so exact
    assert store.spent("key:k", "d").calls == 7 + 64 + 100
    store.close()


@settings(max_examples=40, deadline=None)
@given(
    cap=st.integers(0, 400),
    asks=st.lists(st.tuples(st.integers(0, 9), st.integers(1, 64)), max_size=25),
)
def test_leases_never_pass_a_ceiling(cap: int, asks: list[tuple[int, int]]) -> None:
    """Whatever the sizes asked, every lease granted fits under what is left, and one is
    refused only when not even a single run fits."""
    store = SQLiteStore(":memory:")
    scopes = [Scope("key:k", Budget(calls=cap)), Scope("global", Budget(calls=cap + 50))]
    total = 0
    for want, most in asks:
        (got,) = store.lease_many([(scopes, Usage(calls=want), "d", most, None)])
        if isinstance(got, BudgetExhausted):
            assert total + want > cap
            continue
        _, units = got
        assert 1 <= units <= most and total + units * want <= cap
        if units > 1:
            assert units * want * LEASE_SHARE <= cap - total  # a share, never the rest
        total += units * want
        assert store.spent("key:k", "d").calls == total
    store.close()


def test_runs_on_a_lease_book_in_memory_and_settle_exactly_when_given_back(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.db")
    scope = [Scope("key:k", Budget(calls=10_000))]

    async def main() -> tuple[int, int]:
        ledger = Ledger(store)
        behind = WriteBehind(store, linger=0.001)
        budgets = Budgets(ledger, behind)
        async with anyio.create_task_group() as tg:
            tg.start_soon(behind.run)
            tickets = [await budgets.reserve(scope, Usage(calls=3), "d") for _ in range(40)]
            assert {t.lease is not None for t in tickets} == {True}
            held = store.spent("key:k", "d").calls  # the leases, not the runs
            for i, ticket in enumerate(tickets):
                await budgets.finish(ticket, Usage(calls=1 + i % 3), _run(f"r{i}"))
            await budgets.expire(idle=0)  # every lease idle: given back
            await behind.close()
            tg.cancel_scope.cancel()
        return held, ledger.leases.batches

    held, leases = anyio.run(main)
    used = sum(1 + i % 3 for i in range(40))
    assert leases < 40 and held >= 40 * 3  # far fewer transactions than runs
    assert store.spent("key:k", "d").calls == used  # exactly what the runs used
    assert len(store.runs()) == 40
    store.close()


_WORKER = textwrap.dedent(
    """
    import json, random, sys
    import anyio
    from loomc.serve.behind import WriteBehind
    from loomc.serve.commits import Ledger
    from loomc.serve.leases import Budgets
    from loomc.store import BudgetExhausted, Scope, open_store
    from loomc.units import Budget, Usage

    url, cap, tasks, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    scopes = [Scope("key:k", Budget(calls=cap, tokens=cap * 40)), Scope("global", Budget())]
    rng = random.Random(seed)

    async def main():
        store = open_store(url)
        ledger = Ledger(store)
        behind = WriteBehind(store, linger=0.001)
        budgets = Budgets(ledger, behind, most=16)
        used = [0, 0]
        served = 0

        async def one(i):
            nonlocal served
            await anyio.sleep(rng.random() * 0.05)
            try:
                ticket = await budgets.reserve(scopes, Usage(calls=3, tokens=90), "d")
            except BudgetExhausted:
                return
            await anyio.sleep(rng.random() * 0.005)
            calls = rng.randint(0, 3)
            tokens = rng.randint(0, 90)
            used[0] += calls
            used[1] += tokens
            served += 1
            await budgets.finish(ticket, Usage(calls=calls, tokens=tokens), None)

        async with anyio.create_task_group() as tg:
            tg.start_soon(behind.run)
            tg.start_soon(budgets.keep)
            async with anyio.create_task_group() as runs:
                for i in range(tasks):
                    runs.start_soon(one, i)
            await budgets.close()
            await behind.close()
            tg.cancel_scope.cancel()
        store.close()
        print(json.dumps({"calls": used[0], "tokens": used[1], "served": served}))

    anyio.run(main)
    """
)


def test_two_processes_leasing_one_budget_never_overshoot_and_leave_nothing_booked(
    url: str, tmp_path: Path
) -> None:
    """Two processes, 400 concurrent runs each, on a budget that fits ~330 worst cases: the
    ledger never holds more than the ceiling, and once both stop it holds what was used."""
    cap = 1000
    open_store(url).close()  # the schema made once, before both start
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'research'}"}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), url, str(cap), "400", str(seed)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for seed in (1, 2)
    ]
    store = open_store(url)
    peak = 0
    while any(p.poll() is None for p in procs):  # sampled while both run
        peak = max(peak, store.spent("key:k", "d").calls)
        time.sleep(0.005)
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    used = sum(o["calls"] for o in outs)
    assert peak <= cap and used <= cap
    assert all(o["served"] > 0 for o in outs)
    spent = store.spent("key:k", "d")
    assert spent.calls == used and spent.tokens == sum(o["tokens"] for o in outs)
    assert store.spent("global", "d").calls == used
    store.close()


def test_a_served_budget_far_from_its_ceiling_is_leased_and_settled_on_shutdown(
    tmp_path: Path,
) -> None:
    policy = write_policy(
        tmp_path / "policy.yaml",
        {"keys": [{"name": "ci", "key": f"env:{KEY_VAR}", "per_day": {"calls": 100_000}}]},
    )
    project = loomc.Project.load(ROOT, policy)
    store_path = tmp_path / "store.db"
    server = InProcessServer(create_app(project, open_store(store_path), env={KEY_VAR: SECRET}))

    async def fire(n: int) -> list[httpx.Response]:
        body = {"model": "general@lean", "messages": [{"role": "user", "content": "hi"}]}
        limits = httpx.Limits(max_connections=n)
        async with httpx.AsyncClient(base_url=server.url, headers=AUTH, limits=limits) as c:
            return list(
                await asyncio.gather(*(c.post("/v1/chat/completions", json=body) for _ in range(n)))
            )

    try:
        replies = asyncio.run(fire(64))
        assert {r.status_code for r in replies} == {200}
        metrics = httpx.get(server.url + "/metrics").text
        counts = _counts(metrics)
        assert counts['loomc_store_writes_total{kind="reserve"}'] == 0  # none one by one
        assert 1 <= counts['loomc_store_writes_total{kind="lease"}'] < 64
        assert counts['loomc_store_writes_total{kind="settle"}'] == 0
        while_running = open_store(store_path)
        assert while_running.spent("key:ci", today()).calls >= 64  # the lease held
        while_running.close()
    finally:
        server.stop()  # the lifespan gives back the lease and writes the queued runs
    store = open_store(store_path)
    used = sum(r.json()["loomc"]["calls"] for r in replies)
    assert store.spent("key:ci", today()).calls == used == 64
    assert len(store.runs()) == 64
    store.close()


def _counts(metrics: str) -> dict[str, int]:
    return {
        name: int(value)
        for name, value in (
            line.rsplit(" ", 1) for line in metrics.splitlines() if line.startswith("loomc_store_")
        )
    }


def test_the_write_behind_queue_is_bounded_and_written_whole_on_close(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.db")

    async def main() -> dict[str, Any]:
        behind = WriteBehind(store, linger=3600, limit=5)  # the writer never wakes on its own
        done = anyio.Event()
        waited = []

        async def put(i: int) -> None:
            await behind.put((None, Usage(), _run(f"q{i}")))
            waited.append(i)

        async with anyio.create_task_group() as tg:
            for i in range(5):
                await put(i)  # under the limit: returns at once
            tg.start_soon(put, 5)  # over it: waits for a write
            await anyio.wait_all_tasks_blocked()
            blocked = 5 not in waited
            await behind.flush()
            await anyio.wait_all_tasks_blocked()
            done.set()
        for i in range(6, 9):
            await behind.put((None, Usage(), _run(f"q{i}")))
        await behind.close()
        return {"blocked": blocked, "waited": waited}

    got = anyio.run(main)
    assert got["blocked"] and got["waited"] == list(range(6))
    assert sorted(r.run_id for r in store.runs()) == [f"q{i}" for i in range(9)]
    store.close()


def test_a_failed_write_behind_loses_traces_never_a_booking(tmp_path: Path) -> None:
    """The batch holding a lease's settlement and its runs fails (the runs table is gone): the
    runs' traces are lost and counted, the lease stays booked whole, the request sees nothing."""
    store = open_store(tmp_path / "s.db")
    scope = [Scope("key:k", Budget(calls=10_000))]

    async def main() -> tuple[int, int]:
        ledger = Ledger(store)
        behind = WriteBehind(store, linger=3600)
        budgets = Budgets(ledger, behind)
        tickets = [await budgets.reserve(scope, Usage(calls=2), "d") for _ in range(3)]
        leased = store.spent("key:k", "d").calls
        other = sqlite3.connect(tmp_path / "s.db")
        other.execute("DROP TABLE runs")
        other.close()
        for i, ticket in enumerate(tickets):
            await budgets.finish(ticket, Usage(calls=1), _run(f"r{i}"))
        await budgets.close()  # the lease's settlement joins the queue
        await behind.close()  # one transaction: it fails whole
        return leased, behind.failed

    leased, failed = anyio.run(main)
    assert failed == 4  # three runs and the lease's settlement
    assert leased > 6 and store.spent("key:k", "d").calls == leased  # booked whole: never under
    store.close()
