"""How a streamed answer leaves the server: the role chunk rides with the first delta, and a
delta never waits for the run's end (the writer holds it one turn of the event loop at most).
A real uvicorn server on 127.0.0.1, an injected provider that pauses mid-answer, and a raw
socket client that sees each write the server made as one chunk of the chunked body."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from servekit import KEY_VAR, SECRET, InProcessServer, write_policy

import loomc
from loomc.providers.base import (
    Completion,
    CompletionRequest,
    StreamCallback,
    StreamEvent,
    TokenUsage,
)
from loomc.serve import create_app
from loomc.store import open_store

ROOT = Path(__file__).resolve().parents[2]
PAUSE_S = 1.0


class Pausing:
    """Streams ``DNS maps `` at once, then the rest after ``PAUSE_S``."""

    name = "mock"

    async def complete(
        self, request: CompletionRequest, on_event: StreamCallback | None = None
    ) -> Completion:
        if on_event is not None:
            await on_event(StreamEvent(kind="token", text="DNS maps "))
        await anyio.sleep(PAUSE_S)
        if on_event is not None:
            await on_event(StreamEvent(kind="token", text="names."))
        return Completion("DNS maps names.", TokenUsage(5, 3), "stop")

    async def aclose(self) -> None:
        pass


def _app(tmp_path: Path) -> Any:
    """loomc serve on this repository with one key and the pausing provider."""
    policy = write_policy(
        tmp_path / "policy.yaml", {"keys": [{"name": "ci", "key": f"env:{KEY_VAR}"}]}
    )
    project = loomc.Project.load(ROOT, policy)
    return create_app(
        project,
        open_store(tmp_path / "store.db"),
        providers={"mock": Pausing()},
        env={KEY_VAR: SECRET},
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[InProcessServer]:
    app = _app(tmp_path)
    served = InProcessServer(app)
    yield served
    served.stop()


def _timed_chunks(url: str, model: str = "baseline") -> list[tuple[float, bytes]]:
    """(seconds since the request left, chunk) for each chunk of the streamed reply."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(
        {"model": model, "stream": True, "messages": [{"role": "user", "content": "DNS?"}]}
    ).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {SECRET}"
        f"\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode()
    out: list[tuple[float, bytes]] = []
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        began = time.monotonic()
        sock.sendall(head + body)
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            buffer += sock.recv(65536)
        buffer = buffer.partition(b"\r\n\r\n")[2]
        while True:
            while b"\r\n" not in buffer:
                buffer += sock.recv(65536)
            size_line, _, rest = buffer.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                return out
            while len(rest) < size + 2:
                rest += sock.recv(65536)
            out.append((time.monotonic() - began, rest[:size]))
            buffer = rest[size + 2 :]


def _frames(data: bytes) -> list[bytes]:
    return [f for f in data.split(b"\n\n") if f.startswith(b"data: ")]


# general@lean: its answer chain names `final` and `verify`, steps only the strict and balanced
# tiers have; the lean graph is `direct` alone, and its tokens must still stream as they come
@pytest.mark.parametrize("model", ["baseline", "general@lean"])
def test_the_first_delta_leaves_with_the_role_chunk_before_the_run_ends(
    server: InProcessServer, model: str
) -> None:
    chunks = _timed_chunks(server.url, model)
    first_at, first = chunks[0]
    last_at, last = chunks[-1]
    frames = _frames(first)
    # the role chunk is never a write of its own: the first delta is with it
    assert json.loads(frames[0][6:])["choices"][0]["delta"] == {
        "role": "assistant",
        "content": "",
    }
    assert [json.loads(f[6:])["choices"][0]["delta"].get("content") for f in frames[1:]] == [
        "DNS maps "
    ]
    # ... and it left while the provider paused, not with the run's last frames
    assert last_at - first_at > PAUSE_S * 0.8
    assert _frames(last)[-1] == b"data: [DONE]"
    whole = b"".join(c for _, c in chunks)
    deltas = [
        json.loads(f[6:])["choices"][0]["delta"].get("content", "")
        for f in _frames(whole)
        if f != b"data: [DONE]" and json.loads(f[6:]).get("choices")
    ]
    assert "".join(d or "" for d in deltas) == "DNS maps names."


def test_a_write_that_fails_unexpectedly_ends_the_stream_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The writer is a task of its own: an error in its write (not a hang-up) is logged without
    a traceback, cancels the run and ends the stream; nothing more is written (a stream with a
    delta missing would be worse), and the handler returns instead of raising."""
    app = _app(tmp_path)
    body = json.dumps(
        {"model": "general@lean", "stream": True, "messages": [{"role": "user", "content": "DNS?"}]}
    ).encode()
    sent: list[dict[str, Any]] = []

    async def main() -> float:
        to_app, from_test = anyio.create_memory_object_stream[dict[str, Any]](4)
        started, stopped = anyio.Event(), anyio.Event()

        async def life_send(message: dict[str, Any]) -> None:
            if message["type"] == "lifespan.startup.complete":
                started.set()
            elif message["type"].startswith("lifespan.shutdown"):
                stopped.set()

        async def receive() -> dict[str, Any]:
            if body_left:
                return {"type": "http.request", "body": body_left.pop(), "more_body": False}
            await anyio.sleep_forever()
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and message.get("more_body"):
                raise RuntimeError("the writer's write failed")
            sent.append(message)

        body_left = [body]
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
            "root_path": "", "query_string": b"", "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000), "state": {},
            "headers": [(b"authorization", f"Bearer {SECRET}".encode())],
        }  # fmt: skip
        async with anyio.create_task_group() as tg:
            life = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
            tg.start_soon(app, life, from_test.receive, life_send)
            await to_app.send({"type": "lifespan.startup"})
            await started.wait()
            began = time.monotonic()
            with anyio.fail_after(PAUSE_S * 5):
                await app(scope, receive, send)
            took = time.monotonic() - began
            await to_app.send({"type": "lifespan.shutdown"})
            await stopped.wait()
        to_app.close()
        from_test.close()
        return took

    took = anyio.run(main)
    assert [m["type"] for m in sent] == ["http.response.start"]  # nothing after the failure
    assert took < PAUSE_S  # the run was cancelled in the provider's pause, not waited for
    assert "internal error" in caplog.text and "Traceback" not in caplog.text
