"""Ollama's native ``/api/chat``: NDJSON streaming, token counts in the final ``done`` line.

Ollama reports ``prompt_eval_count`` / ``eval_count`` only on the last line (and omits
``prompt_eval_count`` when the prompt was cached), so a missing count falls back to a
conservative local estimate marked ``estimated``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import httpx

from loomc.providers.base import (
    Completion,
    CompletionRequest,
    HTTPStatusError,
    MalformedResponse,
    ProviderError,
    StreamCallback,
    StreamDropped,
    TokenUsage,
    estimate_tokens,
)
from loomc.providers.body import drain, read_line_batches
from loomc.providers.failures import excerpt, failure
from loomc.providers.http import HTTPProvider, ReadEvents, wire_messages

DEFAULT_BASE_URL = "http://127.0.0.1:11434"


class OllamaProvider(HTTPProvider):
    default_base_url = DEFAULT_BASE_URL

    def body(self, request: CompletionRequest) -> dict[str, Any]:
        options: dict[str, Any] = dict(self.extra_body.get("options", {}))
        if request.max_tokens is not None:
            options["num_predict"] = request.max_tokens
        if request.temperature is not None:
            options["temperature"] = request.temperature
        body: dict[str, Any] = {k: v for k, v in self.extra_body.items() if k != "options"}
        body.update(
            model=request.model,
            messages=wire_messages(request),
            stream=request.stream,
        )
        if options:
            body["options"] = options
        return body

    async def _complete(
        self,
        request: CompletionRequest,
        on_event: StreamCallback | None = None,
        deadline: float | None = None,  # never set: not ``keeps_deadlines``
    ) -> Completion:
        started = time.monotonic()
        ids = {"provider": self.name, "model": request.model}
        parts: list[str] = []
        final: Mapping[str, Any] | None = None
        try:
            async with self.post("api/chat", request, describe=_error_text) as response:
                lineno = 0
                lines = read_line_batches(response, self.max_response_bytes, **ids)
                streaming = on_event is not None and request.stream
                async for batch in lines:
                    # one read's lines, parsed before anything is handed on: its answer text
                    # leaves as one token event (its thinking as one reasoning event), never
                    # waiting for the next read (see openai_compat)
                    out = ReadEvents()
                    error: ProviderError | None = None
                    try:
                        for line in batch:
                            if not line.strip():
                                continue
                            lineno += 1
                            obj = self._parse_line(line, lineno, request)
                            thought = _dig_content(obj, "thinking")
                            if thought and streaming:
                                out.text("reasoning", thought)
                            text = _dig_content(obj)
                            if text:
                                parts.append(text)
                                if streaming:
                                    out.text("token", text)
                            if obj.get("done") is True:
                                final = obj
                                break
                    except ProviderError as exc:
                        error = exc
                    for ev in out.events:
                        assert on_event is not None
                        await on_event(ev)
                    if error is not None:
                        raise error
                    if final is not None:
                        break
                if final is not None:  # to the body's end: the connection stays in the pool
                    await drain(response, lines)
        except httpx.HTTPError as exc:
            raise failure(exc, "".join(parts), **ids) from exc
        content = "".join(parts)
        if final is None:
            raise StreamDropped(
                f"{self.name}: stream closed before its done line ({len(content)} chars)",
                partial=content,
                **ids,
            )
        pt, ct = _count(final.get("prompt_eval_count")), _count(final.get("eval_count"))
        usage = TokenUsage(
            pt if pt is not None else sum(estimate_tokens(m.content) for m in request.messages),
            ct if ct is not None else max(1, estimate_tokens(content)),
            estimated=pt is None or ct is None,
        )
        reason = final.get("done_reason")
        return Completion(
            content=content,
            usage=usage,
            finish_reason=reason if isinstance(reason, str) else "stop",
            latency_ms=int((time.monotonic() - started) * 1000),
        )

    def _parse_line(self, line: str, lineno: int, request: CompletionRequest) -> Mapping[str, Any]:
        ids = {"provider": self.name, "model": request.model}
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MalformedResponse(
                f"{self.name}: malformed NDJSON line {lineno} ({exc.msg}): {excerpt(line, 120)!r}",
                **ids,
            ) from exc
        if not isinstance(obj, Mapping):
            raise MalformedResponse(f"{self.name}: NDJSON line {lineno} is not an object", **ids)
        if "error" in obj:
            raise HTTPStatusError(
                f"{self.name}: error in stream: {excerpt(str(obj['error']))}",
                status=502,
                **ids,
            )
        return obj


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dig_content(obj: Mapping[str, Any], key: str = "content") -> str:
    """``message.content`` of one NDJSON line (``key="thinking"``: a thinking model's reasoning,
    streamed before the answer and never part of it)."""
    message = obj.get("message")
    content = message.get(key) if isinstance(message, Mapping) else None
    return content if isinstance(content, str) else ""


def _error_text(raw: str) -> str:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    if isinstance(obj, Mapping) and "error" in obj:
        return str(obj["error"])
    return raw
