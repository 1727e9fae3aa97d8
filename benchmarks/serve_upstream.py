"""A minimal OpenAI-compatible upstream for the serve benchmarks (run in its own process).

    python benchmarks/serve_upstream.py --port 8100 --delay-ms 50

``POST /v1/chat/completions`` answers after ``--delay-ms`` with a fixed 12-word answer, as JSON
or as an SSE stream (one chunk per word, then usage with ``stream_options.include_usage``, then
``[DONE]``); ``GET /healthz`` answers ok. A bare ASGI callable: the upstream must cost as little
as possible so the arms measure the proxy in front of it, not it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import uvicorn

WORDS = [
    "DNS",
    "maps",
    "names",
    "to",
    "addresses",
    "through",
    "a",
    "hierarchy",
    "of",
    "cached",
    "resolvers",
    "and",
    "servers.",
]
USAGE = {"prompt_tokens": 20, "completion_tokens": len(WORDS), "total_tokens": 20 + len(WORDS)}
DELAY = 0.0


def _completion(model: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-up",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": " ".join(WORDS)},
                    "finish_reason": "stop",
                }
            ],
            "usage": USAGE,
        }
    ).encode()


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-up",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["path"].endswith("/chat/completions"):
        request = json.loads(body)
        model = str(request.get("model", "up"))
        if DELAY:
            await asyncio.sleep(DELAY)
        if not request.get("stream"):
            await _respond(send, 200, b"application/json", _completion(model))
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        parts = [_chunk(model, {"role": "assistant", "content": ""})]
        parts += [_chunk(model, {"content": (" " if i else "") + w}) for i, w in enumerate(WORDS)]
        parts.append(_chunk(model, {}, "stop"))
        if (request.get("stream_options") or {}).get("include_usage"):
            usage = {"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 0}
            usage |= {"model": model, "choices": [], "usage": USAGE}
            parts.append(b"data: " + json.dumps(usage).encode() + b"\n\n")
        parts.append(b"data: [DONE]\n\n")
        await send({"type": "http.response.body", "body": b"".join(parts)})
        return
    await _respond(send, 200, b"application/json", b'{"status": "ok"}')


async def _respond(send: Any, status: int, kind: bytes, body: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]}
    )
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    global DELAY
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=int, default=0)
    args = parser.parse_args()
    DELAY = args.delay_ms / 1000
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, log_level="error", access_log=False, backlog=4096
    )


if __name__ == "__main__":
    main()
