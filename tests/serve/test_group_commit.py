"""Group commit: batched reservations and settlements hold every budget as one at a time did,
and the server writes a burst of streamed deltas with one socket write, not one each."""

from __future__ import annotations

import json
import socket
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from servekit import KEY_VAR, SECRET, ServeProcess, write_policy

from loomc.serve.commits import GroupCommit, Ledger
from loomc.store import BudgetExhausted, Scope, StoredRun, open_store
from loomc.store.base import from_nano, to_nano
from loomc.store.sqlite import SQLiteStore
from loomc.units import Budget, Usage

LIMITS = {
    "key:a": Budget(calls=6, credits=Decimal("2")),
    "key:b": Budget(calls=4),
    "global": Budget(calls=9, credits=Decimal("3")),
}
asks = st.lists(
    st.tuples(
        st.sets(st.sampled_from(sorted(LIMITS)), min_size=1),
        st.integers(0, 3),
        st.decimals("0", "1.5", places=3),
        st.sampled_from(["d1", "d2"]),
    ),
    max_size=20,
)


def _run(run_id: str) -> StoredRun:
    return StoredRun(
        run_id, 1.0, "general", "lean", None, "serve", "completed", 1, 10, None, None, 5,
        "h" + run_id, {"answer": run_id}, [{"kind": "run-started"}, {"kind": "run-finished"}],
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(batch=asks)
def test_a_batch_of_reservations_decides_each_as_one_at_a_time_would(
    batch: list[tuple[set[str], int, Decimal, str]],
) -> None:
    store = SQLiteStore(":memory:")
    used: dict[tuple[str, str], list[int]] = {}  # the model: calls, nano-credits per scope
    expected = []
    for names, calls, credits, period in batch:
        fits = all(
            used.get((n, period), [0, 0])[0] + calls <= int(LIMITS[n].calls or 0)
            and (
                LIMITS[n].credits is None
                or used.get((n, period), [0, 0])[1] + to_nano(credits)
                <= to_nano(Decimal(LIMITS[n].credits))
            )
            for n in names
        )
        expected.append(fits)
        if fits:
            for n in names:
                row = used.setdefault((n, period), [0, 0])
                row[0] += calls
                row[1] += to_nano(credits)
    got = store.reserve_many(
        [
            ([Scope(n, LIMITS[n]) for n in sorted(names)], Usage(calls=c, credits=cr), period)
            for names, c, cr, period in batch
        ]
    )
    assert [isinstance(g, str) for g in got] == expected
    assert all(
        isinstance(g, BudgetExhausted) for g, fits in zip(got, expected, strict=True) if not fits
    )
    assert len({g for g in got if isinstance(g, str)}) == sum(expected)  # distinct ids
    for (name, period), (calls, nano) in used.items():
        spent = store.spent(name, period)
        assert (spent.calls, spent.credits) == (calls, from_nano(nano))
        assert spent.calls <= int(LIMITS[name].calls or 0)
    store.close()


def test_batched_reserve_settle_and_save_on_each_backend(url: str) -> None:
    store = open_store(url)
    a, b = (
        [Scope("key:a", Budget(calls=5))],
        [Scope("key:b", Budget(calls=5)), Scope("global", Budget(calls=8))],
    )
    got = store.reserve_many(
        [
            (a, Usage(calls=3), "d"),
            (b, Usage(calls=4), "d"),
            (a, Usage(calls=3), "d"),
            (b, Usage(calls=1), "d"),
            (b, Usage(calls=1), "d"),
        ]
    )
    assert [type(g).__name__ for g in got] == [
        "str",
        "str",
        "BudgetExhausted",
        "str",
        "BudgetExhausted",
    ]
    assert isinstance(got[2], BudgetExhausted) and got[2].scope == "key:a"
    assert store.spent("key:b", "d").calls == 5 and store.spent("global", "d").calls == 5
    ids = [g for g in got if isinstance(g, str)]
    store.settle_and_save_many(
        [
            (ids[0], Usage(calls=1), _run("r1")),
            (ids[1], Usage(calls=2), _run("r2")),
            (None, Usage(), _run("r3")),
        ]
    )
    assert store.spent("key:a", "d").calls == 1
    assert store.spent("key:b", "d").calls == 3  # 2 settled + 1 still reserved
    assert store.spent("global", "d").calls == 3
    assert {r.run_id for r in store.runs()} == {"r1", "r2", "r3"}
    found = store.run("r2")
    assert found is not None and found.events == [{"kind": "run-started"}, {"kind": "run-finished"}]
    store.close()


def test_two_replicas_settling_batches_of_several_keys_never_deadlock(url: str) -> None:
    """Each replica settles batches holding reservations of two keys (that share the global
    scope) in opposite orders; without one locking order PostgreSQL would deadlock them."""
    if not url.startswith("postgresql"):
        pytest.skip("one SQLite writer at a time cannot deadlock")
    setup = open_store(url)
    scopes = {k: [Scope(f"key:{k}", Budget()), Scope("global", Budget())] for k in "xy"}
    pairs = [[setup.reserve(scopes[k], Usage(calls=2), "d") for k in "xy"] for _ in range(2 * 40)]
    setup.close()
    errors: list[BaseException] = []

    def replica(batches: list[list[str]], flip: bool) -> None:
        store = open_store(url)
        try:
            for i, pair in enumerate(batches):
                ordered = pair[::-1] if flip else pair
                store.settle_and_save_many([(r, Usage(calls=1), _run(f"{r}-{i}")) for r in ordered])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            store.close()

    threads = [
        threading.Thread(target=replica, args=(pairs[:40], False)),
        threading.Thread(target=replica, args=(pairs[40:], True)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    check = open_store(url)
    assert check.spent("global", "d").calls == 2 * 40 * 2
    check.close()


def test_concurrent_requests_share_transactions_and_hold_the_budget(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    ledger = Ledger(store)
    ledger.in_flight = 40  # as the server counts its requests: none of them is alone
    scope = [Scope("key:k", Budget(calls=25))]
    outcomes: list[Any] = []

    async def one(i: int) -> None:
        try:
            reservation = await ledger.reserve(scope, Usage(calls=1), "d")
        except BudgetExhausted as exc:
            outcomes.append(exc)
            return
        outcomes.append(reservation)
        await ledger.settle_and_save(reservation, Usage(calls=1), _run(f"run{i}"))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(40):
                tg.start_soon(one, i)

    anyio.run(main)
    assert sum(isinstance(o, str) for o in outcomes) == 25
    assert sum(isinstance(o, BudgetExhausted) for o in outcomes) == 15
    assert store.spent("key:k", "d").calls == 25 and len(store.runs()) == 25
    # 40 reservations and 25 settlements, in far fewer transactions than one each
    assert ledger.reserves.items == 40 and ledger.reserves.batches < 10
    assert ledger.settles.items == 25 and ledger.settles.batches < 10
    store.close()


class _Failing:
    """A store whose batched write fails: every request of the batch must hear it."""

    url = "failing"

    def settle_and_save_many(self, items: list[Any]) -> None:
        raise OSError("disk full")


def test_a_failed_batch_fails_every_request_in_it() -> None:
    commit = GroupCommit(_Failing(), "settle_and_save_many")  # type: ignore[arg-type]
    errors: list[BaseException] = []

    async def one() -> None:
        try:
            await commit.submit((None, Usage(), _run("x")))
        except OSError as exc:
            errors.append(exc)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(one)

    anyio.run(main)
    assert len(errors) == 5 and commit.items == 5


def _raw_stream(url: str, body: dict[str, Any]) -> tuple[list[bytes], bytes]:
    """POST over a raw socket; the response's chunked-encoding chunks (one per write the server
    made; a sized reply is one) and the whole body."""
    host, port = url.removeprefix("http://").split(":")
    data = json.dumps(body).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {SECRET}"
        f"\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
        "connection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + data)
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    head, _, rest = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return [rest], rest  # a sized reply: one body
    chunks = []
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    return chunks, b"".join(chunks)


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("burst")
    policy = write_policy(tmp / "policy.yaml", {"keys": [{"name": "ci", "key": f"env:{KEY_VAR}"}]})
    server = ServeProcess(policy, tmp / "store.db", env={KEY_VAR: SECRET})
    yield server
    server.stop()


def test_a_burst_of_deltas_leaves_in_one_write(plain_server: ServeProcess) -> None:
    body = {
        "model": "baseline",
        "messages": [{"role": "user", "content": "Explain DNS in a few sentences."}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks, whole = _raw_stream(plain_server.url, body)
    frames = [f for f in whole.split(b"\n\n") if f.startswith(b"data: ")]
    deltas = [
        f for f in frames if f != b"data: [DONE]" and json.loads(f[6:]).get("choices")
        and json.loads(f[6:])["choices"][0]["delta"].get("content")
    ]  # fmt: skip
    assert len(deltas) >= 5  # the mock streams its answer word by word
    assert frames[-1] == b"data: [DONE]"
    # the role chunk with the burst of deltas and, when the run ends within the writer's turn,
    # the last frames: every frame is still whole, in order, and the answer is the deltas joined
    assert len(chunks) <= 2 < len(frames)
    assert all(c.endswith(b"\n\n") for c in chunks)
    first = [f for f in chunks[0].split(b"\n\n") if f]
    assert json.loads(first[0][6:])["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert len(first) > 1  # never a write of the role chunk alone


def test_a_client_leaving_mid_body_leaves_no_traceback(plain_server: ServeProcess) -> None:
    host, port = plain_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer "
            + SECRET.encode()
            + b'\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"model":'
        )
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the server is still serving
        _, whole = _raw_stream(
            plain_server.url,
            {"model": "general@lean", "messages": [{"role": "user", "content": "hi"}]},
        )
        if whole:
            break
    assert b"chat.completion" in whole
    log = plain_server.log.read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log


def test_metrics_count_store_transactions_and_the_writes_they_carried(
    plain_server: ServeProcess,
) -> None:
    body = {"model": "general@lean", "messages": [{"role": "user", "content": "hi"}]}
    _raw_stream(plain_server.url, body)
    deadline = time.monotonic() + 5
    while True:  # the run is written behind the response, within milliseconds
        counts = _store_counts(plain_server.url)
        if counts['loomc_store_writes_total{kind="behind"}'] or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    # this key has no daily budget: nothing to reserve or settle; the run is stored behind
    assert counts['loomc_store_writes_total{kind="reserve"}'] == 0
    assert counts['loomc_store_writes_total{kind="settle"}'] == 0
    assert counts['loomc_store_writes_total{kind="lease"}'] == 0
    writes = counts['loomc_store_writes_total{kind="behind"}']
    assert 1 <= counts['loomc_store_transactions_total{kind="behind"}'] <= writes


def _store_counts(url: str) -> dict[str, int]:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        raw = b""
        while part := sock.recv(65536):
            raw += part
    return {
        name: int(value)
        for name, value in (
            line.rsplit(" ", 1)
            for line in raw.decode().splitlines()
            if line.startswith("loomc_store_")
        )
    }
