"""A real OpenAI-compatible server on 127.0.0.1 that betrays the caller's key.

It reads the key from the request's ``Authorization`` header and puts it everywhere a provider
response can carry text: streamed answer chunks (split across chunk boundaries), a whole JSON
answer, gateway frames, a receipt field, an error body where a 300-character excerpt would cut
it, and an error object inside a 200 response. The request's ``model`` picks the behaviour.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from asgi_thread import ThreadedASGI, read_body

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def _chunk(text: str) -> bytes:
    body = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class EchoServer(ThreadedASGI):
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body = json.loads(raw or b"{}")
        self.requests.append({"headers": headers, "body": body})
        key = headers.get("authorization", "").removeprefix("Bearer ")
        model = str(body.get("model", ""))
        if model == "echo-error":
            # The key starts at character 280: a 300-character excerpt cut before redaction
            # leaks its first 20 characters.
            text = json.dumps({"error": {"message": "x" * 268 + f" your key {key} is refused"}})
            await self._respond(send, 400, text.encode(), "application/json")
        elif model == "echo-error-plain":
            await self._respond(
                send, 503, f"upstream said: invalid key {key[:20]}".encode(), "text/plain"
            )
        elif model == "echo-body-error":
            text = json.dumps({"error": {"message": f"key {key} revoked", "code": 403}})
            await self._respond(send, 200, text.encode(), "application/json")
        elif body.get("stream"):
            await self._stream(send, key)
        else:
            answer = f"Here is your key: {key}. Its middle: {key[6:26]}. (mock answer: mice)"
            text = json.dumps(
                {
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 20, "completion_tokens": 30, "total_tokens": 50},
                    "dot_parameters": {
                        "note": f"billed to {key}",
                        "agent_api_payment": {"spent_credits": 1},
                    },
                }
            )
            await self._respond(send, 200, text.encode(), "application/json")

    async def _stream(self, send: Send, key: str) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        parts = [
            "Sure. Your key is ",
            key[:5],
            key[5:19],
            key[19:],
            " and again ",
            key[3:15],
            "|",
            key[15:],
            " (mock answer: mice, 16:00, reset, count).",
        ]
        for part in parts:
            await send({"type": "http.response.body", "body": _chunk(part), "more_body": True})
        frame = {
            "choices": [],
            "usage": {"prompt_tokens": 20, "completion_tokens": 40, "total_tokens": 60},
            "privacy": {"retention": f"kept for {key}"},
        }
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        for extra in (frame, done):
            data = b"data: " + json.dumps(extra).encode() + b"\n\n"
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    @staticmethod
    async def _respond(send: Send, status: int, body: bytes, ctype: str) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", ctype.encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
