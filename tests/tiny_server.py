"""A real OpenAI-compatible server on 127.0.0.1 serving tests/tinymodel.py's model + LoRA.

`POST /v1/chat/completions` (non-streaming) decodes the one user message as the raw v2 prompt
— what vLLM does with an identity chat template — greedily with the in-process
`LearnedPlanner`, and answers the OpenAI wire (`choices[0].message.content`, `usage`).
`GET /v1/models` lists the served name. It counts requests and the prompts it saw.
"""

from __future__ import annotations

import json
from typing import Any

from asgi_thread import ThreadedASGI, read_body


class TinyServer(ThreadedASGI):
    def __init__(self, planner: Any, name: str = "conductor") -> None:
        self.planner = planner
        self.name = name
        self.prompts: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        path = scope["path"]
        if scope["method"] == "GET" and path == "/v1/models":
            await self._reply(send, 200, {"object": "list", "data": [{"id": self.name}]})
            return
        if scope["method"] != "POST" or path != "/v1/chat/completions":
            await self._reply(send, 404, {"error": {"message": "not found"}})
            return
        req = json.loads(body)
        if req.get("model") != self.name:
            await self._reply(send, 404, {"error": {"message": f"no model {req.get('model')}"}})
            return
        prompt = req["messages"][-1]["content"]
        self.prompts.append(prompt)
        gen = self.planner.generate_detailed([prompt], batch_size=1)[0]
        await self._reply(
            send,
            200,
            {
                "id": f"cmpl-{len(self.prompts)}",
                "object": "chat.completion",
                "model": self.name,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": gen.text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": gen.input_tokens,
                    "completion_tokens": gen.output_tokens,
                    "total_tokens": gen.input_tokens + gen.output_tokens,
                },
            },
        )

    async def _reply(self, send: Any, status: int, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(raw)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": raw})
