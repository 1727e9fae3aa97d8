"""Per-key daily budgets, the shared ledger and cancellation, counted at the provider: an app
from ``create_app`` with an injected counting provider, under uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from servekit import KEY_VAR, SECRET, InProcessServer, ServeProcess, write_policy

import loomc
from loomc.providers.base import Completion, CompletionRequest, StreamCallback
from loomc.providers.mock import MockProvider
from loomc.serve import create_app
from loomc.store import open_store, today

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"authorization": f"Bearer {SECRET}"}


class Counting:
    """The policy's mock provider, counting the calls it receives and those cancelled."""

    def __init__(self, inner: MockProvider) -> None:
        self.inner, self.name = inner, inner.name
        self.calls = 0
        self.cancelled = 0

    async def complete(
        self, request: CompletionRequest, on_event: StreamCallback | None = None
    ) -> Completion:
        self.calls += 1
        try:
            return await self.inner.complete(request, on_event)
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()


def serve(
    tmp: Path, serve_section: dict[str, Any], mock: dict[str, Any] | None = None
) -> Iterator[tuple[InProcessServer, Counting, Path]]:
    policy = write_policy(tmp / "policy.yaml", serve_section, mock)
    project = loomc.Project.load(ROOT, policy)
    script = project.policy.providers["mock"].mock
    counting = Counting(MockProvider("mock", script))
    store_path = tmp / "store.db"
    app = create_app(
        project, open_store(store_path), providers={"mock": counting}, env={KEY_VAR: SECRET}
    )
    server = InProcessServer(app)
    try:
        yield server, counting, store_path
    finally:
        server.stop()


def key(per_day: dict[str, Any], per_run: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "keys": [
            {"name": "ci", "key": f"env:{KEY_VAR}", "per_day": per_day, "per_run": per_run or {}}
        ]
    }


@pytest.fixture
def five_calls(tmp_path: Path) -> Iterator[tuple[InProcessServer, Counting, Path]]:
    yield from serve(tmp_path, key({"calls": 5}), {"latency_ms": 20})


async def _fire(url: str, n: int, model: str, fault_every: int = 0) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=n)

    def body(i: int) -> dict[str, Any]:
        text = "FAULT now" if fault_every and i % fault_every == 0 else "Explain DNS briefly."
        return {"model": model, "messages": [{"role": "user", "content": text}]}

    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=60, limits=limits) as c:
        posts = (c.post("/v1/chat/completions", json=body(i)) for i in range(n))
        return list(await asyncio.gather(*posts))


def test_64_concurrent_requests_never_run_more_calls_than_the_key_budget(
    five_calls: tuple[InProcessServer, Counting, Path],
) -> None:
    server, provider, store_path = five_calls
    replies = asyncio.run(_fire(server.url, 64, "general@lean"))
    ok = [r for r in replies if r.status_code == 200]
    refused = [r for r in replies if r.status_code == 402]
    assert len(ok) + len(refused) == 64
    assert provider.calls == len(ok) == 5  # lean reserves exactly one call per run
    assert {r.json()["error"]["code"] for r in refused} == {"budget_exhausted"}
    assert refused[0].json()["error"]["type"] == "insufficient_quota"
    store = open_store(store_path)
    assert store.spent("key:ci", today()).calls == 5
    assert len(store.runs()) == 5
    store.close()
    # exhausted: the next request is refused before any provider call
    again = httpx.post(
        server.url + "/v1/chat/completions",
        headers=AUTH,
        json={"model": "general@lean", "messages": [{"role": "user", "content": "one more"}]},
    )
    assert again.status_code == 402 and provider.calls == 5
    streamed = httpx.post(  # a stream is refused with its status before it starts
        server.url + "/v1/chat/completions",
        headers=AUTH,
        json={
            "model": "general@lean",
            "stream": True,
            "messages": [{"role": "user", "content": "x"}],
        },
    )
    assert streamed.status_code == 402 and streamed.json()["error"]["code"] == "budget_exhausted"
    assert "ci" not in again.json()["error"]["message"].replace("this key", "")


def test_escalating_runs_reserve_their_worst_case_and_settle_to_use(tmp_path: Path) -> None:
    for server, provider, store_path in serve(tmp_path, key({"calls": 9}), {"latency_ms": 20}):
        replies = asyncio.run(_fire(server.url, 64, "general@balanced"))
        ok = [r for r in replies if r.status_code == 200]
        used = sum(r.json()["loomc"]["calls"] for r in ok)
        assert provider.calls == used <= 9  # balanced may escalate: 2 reserved, 1 or 2 used
        assert len(ok) >= 4  # each reservation of 2 fits at least 4 times
        store = open_store(store_path)
        assert store.spent("key:ci", today()).calls == used
        store.close()


def test_per_run_key_ceiling_refuses_a_tier_it_cannot_fit(tmp_path: Path) -> None:
    for server, provider, _ in serve(tmp_path, key({}, {"calls": 1})):
        refused = httpx.post(
            server.url + "/v1/chat/completions",
            headers=AUTH,
            json={"model": "general@strict", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert refused.status_code == 400 and provider.calls == 0
        fits = httpx.post(
            server.url + "/v1/chat/completions",
            headers=AUTH,
            json={"model": "general@lean", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert fits.status_code == 200 and provider.calls == 1


def test_failing_upstream_is_502_in_openai_shape(tmp_path: Path) -> None:
    fault = {
        "rules": [{"pattern": "EXPLODE", "fault": {"kind": "status", "status": 500, "times": 99}}]
    }
    for server, provider, _ in serve(tmp_path, key({"calls": 10}), fault):
        body = {"model": "general@lean", "messages": [{"role": "user", "content": "EXPLODE"}]}
        reply = httpx.post(server.url + "/v1/chat/completions", headers=AUTH, json=body)
        assert reply.status_code == 502
        assert reply.json()["error"]["code"] == "upstream_failed"
        assert "mock HTTP 500" in reply.json()["error"]["message"]
        streamed = httpx.post(
            server.url + "/v1/chat/completions", headers=AUTH, json={**body, "stream": True}
        )
        frames = [line for line in streamed.text.splitlines() if line.startswith("data: ")]
        assert '"upstream_failed"' in frames[-2] and frames[-1] == "data: [DONE]"
        assert provider.calls == 2


def test_client_disconnect_cancels_the_run_and_books_its_reservation(tmp_path: Path) -> None:
    slow = {"rules": [{"pattern": "SLOW", "latency_ms": 5000}]}
    for server, provider, store_path in serve(tmp_path, key({"calls": 10}), slow):
        body = {
            "model": "general@lean",
            "stream": True,
            "messages": [{"role": "user", "content": "SLOW please"}],
        }
        with (
            httpx.Client(base_url=server.url, headers=AUTH, timeout=30) as c,
            c.stream("POST", "/v1/chat/completions", json=body) as reply,
        ):
            # the head is out (the role chunk waits for the first token): the stream is live
            assert reply.status_code == 200
            assert reply.headers["content-type"].startswith("text/event-stream")
            deadline = time.monotonic() + 4
            while provider.calls == 0 and time.monotonic() < deadline:
                time.sleep(0.01)  # the call is in flight: now hang up
        deadline = time.monotonic() + 4
        while provider.cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert provider.calls == 1 and provider.cancelled == 1
        store = open_store(store_path)
        assert store.spent("key:ci", today()).calls == 1  # booked, never refunded
        store.close()
        # hanging up at once: a run stopped before its step started books nothing; one stopped
        # after (the step-started event precedes the send) keeps its one reserved call booked
        with (
            httpx.Client(base_url=server.url, headers=AUTH, timeout=30) as c,
            c.stream("POST", "/v1/chat/completions", json=body) as reply,
        ):
            assert reply.status_code == 200  # the client hangs up right after the head
        time.sleep(0.5)
        store = open_store(store_path)
        assert provider.calls <= store.spent("key:ci", today()).calls <= 2
        store.close()


def test_two_server_processes_sharing_one_store_never_overshoot(url: str, tmp_path: Path) -> None:
    """128 concurrent requests over 2 replicas on one store, a third of them failing upstream."""
    faults = {
        "latency_ms": 10,
        "rules": [{"pattern": "FAULT", "fault": {"kind": "status", "status": 500, "times": 999}}],
    }
    policy = write_policy(tmp_path / "policy.yaml", key({"calls": 20}), faults)
    servers = [
        ServeProcess(policy, tmp_path / f"s{i}.db", env={KEY_VAR: SECRET}, store_url=url)
        for i in range(2)
    ]
    try:

        async def both() -> list[httpx.Response]:
            got = await asyncio.gather(
                *(_fire(s.url, 64, "general@balanced", fault_every=3) for s in servers)
            )
            return got[0] + got[1]

        replies = asyncio.run(both())
    finally:
        for s in servers:
            s.stop()
    ok = [r for r in replies if r.status_code == 200]
    failed = [r for r in replies if r.status_code == 502]
    assert {r.status_code for r in replies} <= {200, 402, 502} and ok and failed
    opened = open_store(url)
    stored = opened.runs()
    used = sum(r.calls for r in stored)
    assert used == sum(r.json()["loomc"]["calls"] for r in ok) + len(failed)
    assert used == opened.spent("key:ci", today()).calls <= 20
    assert len(stored) == len(ok) + len(failed)
    opened.close()
