"""A real HTTP server on 127.0.0.1 that replays recorded wire bytes (uvicorn + a bare ASGI app).

The request's ``model`` picks the scenario, so one server covers every wire format and fault.
Each scenario can fail its first ``fail_times`` requests (to exercise the executor's retries),
cut the connection after ``drop_after`` bytes, or stall before the first byte.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from asgi_thread import ThreadedASGI, read_body

WIRE = Path(__file__).parent / "wire"
TAIL_S = 4.0

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass
class Scenario:
    stream_file: str | None = None  # replayed when the request streams
    whole_file: str | None = None  # replayed when it does not
    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    drop_after: int | None = None  # bytes sent before the connection is cut
    stall_s: float = 0.0
    fail_times: int = 0  # the first N requests answer `fail_status`
    fail_status: int = 503
    chunk_size: int = 0  # 0: one write per event/line, as real servers flush
    frame_delay_s: float = 0.0  # pause before each event/line: a slow model
    # After the whole recording (its `[DONE]` or done line): "stall" keeps the body open for
    # TAIL_S seconds, "flood" sends junk lines for TAIL_S seconds; then the body ends.
    tail: str = ""


def _sse(name: str) -> Scenario:
    return Scenario(stream_file=name)


SCENARIOS: dict[str, Scenario] = {
    "litellm-usage": _sse("litellm-stream-usage.sse"),
    "litellm-nousage": _sse("litellm-stream-nousage.sse"),
    "transformers-serve": _sse("transformers-serve-stream.sse"),
    "llamacpp": _sse("llamacpp-stream.sse"),
    "openrouter": _sse("openrouter-stream.sse"),
    "dot": Scenario(stream_file="dot-stream.sse", whole_file="dot-whole.json"),
    "malformed": _sse("malformed.sse"),
    "drop": Scenario(stream_file="litellm-stream-usage.sse", drop_after=1400),
    "drop-ollama": Scenario(
        stream_file="ollama-stream.ndjson", drop_after=500, content_type="application/x-ndjson"
    ),
    "rate-limited": Scenario(
        status=429,
        body='{"error":{"message":"slow down","code":429}}',
        headers={"retry-after": "2"},
    ),
    "rate-limited-date": Scenario(
        status=429, body="{}", headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}
    ),
    "rate-limited-ms": Scenario(status=429, body="{}", headers={"retry-after-ms": "1500"}),
    "unavailable": Scenario(status=503, body="upstream overloaded"),
    "bad-request": Scenario(status=400, body='{"error":{"message":"max_tokens too large"}}'),
    "echo-auth": Scenario(status=401, body=""),  # body filled with the request's auth header
    "stall": Scenario(stream_file="llamacpp-stream.sse", stall_s=3.0),
    "flaky": Scenario(
        stream_file="litellm-stream-usage.sse",
        whole_file=None,
        fail_times=1,
        fail_status=503,
        headers={"retry-after": "0"},
    ),
    "not-json": Scenario(status=200, body="<html>gateway</html>", content_type="text/html"),
    "ollama": Scenario(
        stream_file="ollama-stream.ndjson",
        whole_file="ollama-whole.json",
        content_type="application/x-ndjson",
    ),
    "ollama-cached": Scenario(
        stream_file="ollama-stream-cached.ndjson", content_type="application/x-ndjson"
    ),
    "ollama-missing": Scenario(
        status=404, body='{"error":"model \\"nope\\" not found"}', content_type="application/json"
    ),
    "ollama-malformed": Scenario(
        status=200,
        body='{"message":{"content":"a"},"done":false}\n{oops\n',
        content_type="application/x-ndjson",
    ),
    "reasoning": _sse("reasoning-stream.sse"),
    "ollama-thinking": Scenario(
        stream_file="ollama-thinking.ndjson", content_type="application/x-ndjson"
    ),
    "slow": Scenario(stream_file="llamacpp-stream.sse", frame_delay_s=0.4),
    "done-then-stall": Scenario(stream_file="litellm-stream-usage.sse", tail="stall"),
    "done-then-flood": Scenario(stream_file="litellm-stream-usage.sse", tail="flood"),
    "ollama-done-then-stall": Scenario(
        stream_file="ollama-stream.ndjson", content_type="application/x-ndjson", tail="stall"
    ),
    "zero": Scenario(
        stream_file="transformers-serve-stream.sse", whole_file=None
    ),  # benchmark: no latency at all
}


def _split_frames(data: bytes, ndjson: bool) -> list[bytes]:
    sep = b"\n" if ndjson else b"\n\n"
    parts = data.split(sep)
    out = [p + sep for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


class ReplayServer(ThreadedASGI):
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = await read_body(receive)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        self.requests.append(
            # `client` is the (host, port) of the TCP connection: a new port, a new connection
            {"path": scope["path"], "headers": headers, "body": body, "client": scope["client"]}
        )
        name = str(body.get("model", ""))
        scenario = SCENARIOS.get(name)
        if scenario is None:
            await self._respond(
                send, 404, b'{"error":{"message":"unknown scenario"}}', "application/json", {}
            )
            return
        count = self.counts.get(name, 0) + 1
        self.counts[name] = count
        if count <= scenario.fail_times:
            await self._respond(
                send,
                scenario.fail_status,
                b"temporarily unavailable",
                "text/plain",
                scenario.headers,
            )
            return
        if scenario.stall_s:
            await anyio.sleep(scenario.stall_s)
        streaming = bool(body.get("stream", name.startswith("ollama")))
        file = scenario.stream_file if streaming else scenario.whole_file
        if name == "echo-auth":
            text = json.dumps({"error": {"message": f"bad key {headers.get('authorization')}"}})
            await self._respond(send, 401, text.encode(), "application/json", {})
            return
        if file is None:
            ctype = scenario.content_type if scenario.body else "application/json"
            await self._respond(
                send, scenario.status, scenario.body.encode(), ctype, scenario.headers
            )
            return
        data = (WIRE / file).read_bytes()
        ndjson = file.endswith(".ndjson")
        ctype = "application/json" if file.endswith(".json") else scenario.content_type
        await send(
            {
                "type": "http.response.start",
                "status": scenario.status,
                "headers": [(b"content-type", ctype.encode())],
            }
        )
        sent = 0
        for frame in _split_frames(data, ndjson):
            if scenario.drop_after is not None and sent + len(frame) > scenario.drop_after:
                cut = frame[: scenario.drop_after - sent]
                if cut:
                    await send({"type": "http.response.body", "body": cut, "more_body": True})
                # Raising after the body started makes uvicorn abort the connection: the client
                # sees an incomplete chunked body, exactly like a dropped upstream.
                raise ConnectionAbortedError("replay: dropping the connection mid-stream")
            if scenario.frame_delay_s:
                await anyio.sleep(scenario.frame_delay_s)
            await send({"type": "http.response.body", "body": frame, "more_body": True})
            sent += len(frame)
        if scenario.tail:
            await self._tail(send, scenario.tail)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _tail(send: Send, kind: str) -> None:
        """A body that goes on after its end marker (bounded, so the server can still stop):
        silence for TAIL_S seconds, or 4 MiB of comment lines."""
        if kind == "stall":
            await anyio.sleep(TAIL_S)
        junk = b": " + b"x" * 16_000 + b"\n"
        for _ in range(256 if kind == "flood" else 0):
            await send({"type": "http.response.body", "body": junk, "more_body": True})

    @staticmethod
    async def _respond(
        send: Send, status: int, body: bytes, ctype: str, headers: dict[str, str]
    ) -> None:
        hdrs = [(b"content-type", ctype.encode())]
        hdrs += [(k.encode(), v.encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": body})
