"""An OpenAI-compatible server on 127.0.0.1 that counts every request and can lie about usage.

The request's ``model`` picks what the server claims: honest usage, negative token counts and
Dot receipts, 20,000 completion tokens for any ``max_tokens``, a Dot receipt of 50 credits, or
inconsistent usage across stream chunks. ``GET /count`` answers how many chat requests it saw
(by model). It runs in a thread (``LyingServer().start()``) or, for tests that SIGKILL the
client, in its own process: ``python lying_server.py PORT [DELAY_S]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, also when run as a script

import json
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import uvicorn
from asgi_thread import ThreadedASGI, read_body

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

ANSWER = "The answer is four. Two plus two makes four, by the definition of addition."
HONEST = {"prompt_tokens": 30, "completion_tokens": 18, "total_tokens": 48}


def _dot(spent: object) -> dict[str, Any]:
    return {"dot_parameters": {"agent_api_payment": {"spent_credits": spent}}}


# model -> the usage and extra top-level keys of each chunk that carries usage (in order)
SCENARIOS: dict[str, list[dict[str, Any]]] = {
    "honest": [{"usage": HONEST}],
    "negative": [
        {
            "usage": {"prompt_tokens": -1000, "completion_tokens": -1000, "total_tokens": -2000},
            **_dot(-100),
        }
    ],
    "oversized": [
        {"usage": {"prompt_tokens": 30, "completion_tokens": 20000, "total_tokens": 20030}}
    ],
    "dot-50": [{"usage": HONEST, **_dot(50)}],
    "inconsistent": [
        {"usage": {"prompt_tokens": 30, "completion_tokens": 18, "total_tokens": 5}, **_dot(2)},
        {
            "usage": {"prompt_tokens": 30, "completion_tokens": -7, "total_tokens": 9999},
            **_dot("-0.5"),
        },
    ],
}


class LyingServer(ThreadedASGI):
    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.counts: Counter[str] = Counter()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = await read_body(receive)
        if scope["path"] == "/count":
            await _json(send, {"total": self.total, "by_model": dict(self.counts)})
            return
        body = json.loads(raw or b"{}")
        model = str(body.get("model", ""))
        self.counts[model] += 1  # counted as soon as the whole request has arrived
        chunks = SCENARIOS.get(model)
        if chunks is None:
            await _json(send, {"error": {"message": "unknown model"}}, 404)
            return
        if self.delay_s:
            await anyio.sleep(self.delay_s)
        if not body.get("stream"):
            merged: dict[str, Any] = {}
            for extra in chunks:
                merged.update(extra)
            await _json(
                send,
                {
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": ANSWER},
                        }
                    ],
                    **merged,
                },
            )
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        frames = [
            {"choices": [{"index": 0, "delta": {"content": word}}]}
            for word in ANSWER.split(" ")[:1]
        ]
        frames.append(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": ANSWER[len(ANSWER.split(" ")[0]) :]},
                        "finish_reason": "stop",
                    }
                ]
            }
        )
        frames += [{"choices": [], **extra} for extra in chunks]
        for frame in frames:
            data = f"data: {json.dumps(frame)}\n\n".encode()
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})


async def _json(send: Send, obj: object, status: int = 200) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(obj).encode()})


if __name__ == "__main__":  # its own process: survives the clients it counts
    port, delay = int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    uvicorn.run(
        LyingServer(delay),
        host="127.0.0.1",
        port=port,
        log_level="critical",
        lifespan="off",
        access_log=False,
    )
