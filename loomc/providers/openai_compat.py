"""OpenAI-compatible ``/chat/completions`` over httpx, streaming (SSE) or not, with presets.

The ledger must never record a streamed call as free, so streaming requests ask for
``stream_options.include_usage``; when a server still sends no usage (llama.cpp), tokens are
counted locally, conservatively, and marked estimated. Gateways that bill natively (the Dot
gateway's ``dot_parameters.agent_api_payment.spent_credits``, OpenRouter's ``usage.cost``)
return a ``NativeReceipt``; their privacy and payment frames surface as trace frames.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx

from loomc.policy.models import ProviderConfig
from loomc.providers.base import (
    Completion,
    CompletionRequest,
    HTTPStatusError,
    MalformedResponse,
    NativeReceipt,
    ProviderError,
    StreamCallback,
    StreamDropped,
    StreamEvent,
    TokenUsage,
)
from loomc.providers.failures import excerpt, failure
from loomc.providers.http import HTTPProvider, ReadEvents, estimated_usage, wire_messages
from loomc.providers.sse import SSEEvent, SSEParser


@dataclass(frozen=True, slots=True)
class Preset:
    base_url: str | None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] = field(default_factory=dict)


PRESETS: dict[str, Preset] = {
    "openai-compatible": Preset(None),
    # OpenRouter reports the charged USD in usage.cost when asked to account usage.
    "openrouter": Preset(
        "https://openrouter.ai/api/v1",
        headers={"X-Title": "loomc"},
        body={"usage": {"include": True}},
    ),
    # LM Studio's local server: no key needed unless one is configured.
    "lmstudio": Preset("http://127.0.0.1:1234/v1"),
    "dot": Preset("https://api.usedot.xyz/agent/v1"),
}

# Top-level response keys that carry gateway metadata worth tracing (privacy, payment).
_FRAME_KEYS = ("dot_parameters", "privacy", "provider_frames")
# Every top-level key ``_absorb_meta`` reads: a chunk with none of them (nearly every streamed
# chunk) is passed over with one set check.
_META_KEYS = frozenset(("usage", "payment", *_FRAME_KEYS))
# What ``json.loads`` ends in (the decoder's C scanner; typeshed does not declare it): one C
# call for a frame that is exactly one JSON value
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _json(text: str) -> Any:
    """``json.loads(text)``, without its three Python frames for the common frame (a value
    from the first character to the last); anything else goes through ``json.loads`` itself,
    which raises its own errors."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def _decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return out if out.is_finite() else None


def _dig(obj: Any, *path: str) -> Any:
    # JSON objects are dicts: ``isinstance(x, dict)`` is a type check, where ``Mapping`` runs
    # the ABC machinery (a Python frame each; ~10 a streamed chunk, ~4 % of a served request)
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


@dataclass
class _State:
    """What a response has told us so far; streamed chunks and whole bodies fold into it."""

    parts: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    spent_credits: Decimal | None = None
    cost_usd: Decimal | None = None
    receipt_raw: dict[str, Any] = field(default_factory=dict)
    frames: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _absorb_meta(chunk: dict[str, Any], state: _State) -> list[dict[str, Any]]:
    """Usage, native receipts and frames from one chunk or body; returns the new frames."""
    if _META_KEYS.isdisjoint(chunk):
        return []
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(pt, int) and not isinstance(pt, bool):
            state.prompt_tokens = pt
        if isinstance(ct, int) and not isinstance(ct, bool):
            state.completion_tokens = ct
        cost = _decimal(usage.get("cost"))
        if cost is not None:
            state.cost_usd = cost
            state.receipt_raw["usage.cost"] = str(cost)
    for path in (
        ("dot_parameters", "agent_api_payment", "spent_credits"),
        ("payment", "spent_credits"),
    ):
        spent = _decimal(_dig(chunk, *path))
        if spent is not None:
            state.spent_credits = spent
            state.receipt_raw[".".join(path)] = str(spent)
    new: list[dict[str, Any]] = []
    for key in _FRAME_KEYS:
        value = chunk.get(key)
        if isinstance(value, dict) and value:
            frame = {"type": key, **{str(k): v for k, v in value.items()}}
            new.append(frame)
    state.frames.extend(new)
    return new


def _reasoning(delta: dict[str, Any]) -> str:
    """A delta's reasoning text: ``reasoning_content`` (DeepSeek, vLLM, LM Studio, LiteLLM) or
    ``reasoning`` (OpenRouter, Ollama's OpenAI endpoint). Never part of the answer."""
    for key in ("reasoning_content", "reasoning"):
        value = delta.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _first_choice(chunk: dict[str, Any]) -> dict[str, Any] | None:
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _absorb_chunk(chunk: dict[str, Any], event: str, state: _State, out: ReadEvents) -> None:
    """One streamed chunk into ``state``; its text and frames into ``out``. Runs once per frame
    (16 a run in the serve benchmarks): the common chunk (one choice, a content delta, no
    metadata) takes the fewest checks."""
    choices = chunk.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    if isinstance(choice, dict):
        delta = choice.get("delta")
        if isinstance(delta, dict):
            if "reasoning_content" in delta or "reasoning" in delta:
                thought = _reasoning(delta)
                if thought:
                    out.text("reasoning", thought)
            text = delta.get("content")
            if isinstance(text, str) and text:
                state.parts.append(text)
                out.text("token", text)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            state.finish_reason = reason
    else:
        choice = None
    if not _META_KEYS.isdisjoint(chunk):
        for frame in _absorb_meta(chunk, state):
            out.frame(frame)
    if event != "message" and choice is None:
        frame = {"type": event, **{str(k): v for k, v in chunk.items()}}
        state.frames.append(frame)
        out.frame(frame)


def _error_in_body(chunk: dict[str, Any], provider: str, model: str) -> ProviderError | None:
    err = chunk.get("error")
    if err is None:
        return None
    message = err.get("message") if isinstance(err, dict) else err
    code = err.get("code") if isinstance(err, dict) else None
    status = code if isinstance(code, int) and 400 <= code < 600 else 502
    return HTTPStatusError(
        f"{provider}: error in response: {excerpt(str(message))}",
        status=status,
        provider=provider,
        model=model,
    )


class OpenAICompatProvider(HTTPProvider):
    keeps_deadlines = True  # every read goes through ``exchange``, which keeps the deadline

    def __init__(self, name: str, cfg: ProviderConfig, env: Mapping[str, str]) -> None:
        super().__init__(name, cfg, env)
        self.preset = PRESETS.get(cfg.type, PRESETS["openai-compatible"])
        self.default_base_url = self.preset.base_url
        self.default_headers = self.preset.headers

    def body(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {**self.preset.body, **self.extra_body}
        body.update(
            model=request.model,
            messages=wire_messages(request),
            stream=request.stream,
        )
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stream:
            body["stream_options"] = {**body.get("stream_options", {}), "include_usage": True}
        return body

    async def _complete(
        self,
        request: CompletionRequest,
        on_event: StreamCallback | None = None,
        deadline: float | None = None,
    ) -> Completion:
        started = time.monotonic()
        state = _State()
        try:
            if request.stream:
                await self._stream(request, state, on_event, deadline)
            else:
                await self._whole(request, state, on_event, deadline)
        except httpx.HTTPError as exc:
            raise failure(exc, state.text, provider=self.name, model=request.model) from exc
        return self._completion(request, state, started)

    def _completion(self, request: CompletionRequest, state: _State, started: float) -> Completion:
        if state.prompt_tokens is not None and state.completion_tokens is not None:
            usage = TokenUsage(state.prompt_tokens, state.completion_tokens)
        else:
            usage = estimated_usage(request.messages, state.text)
        receipt = None
        if state.spent_credits is not None or state.cost_usd is not None:
            receipt = NativeReceipt(state.spent_credits, state.cost_usd, dict(state.receipt_raw))
        return Completion(
            content=state.text,
            usage=usage,
            finish_reason=state.finish_reason,
            receipt=receipt,
            latency_ms=int((time.monotonic() - started) * 1000),
            frames=tuple(state.frames),
        )

    async def _whole(
        self,
        request: CompletionRequest,
        state: _State,
        on_event: StreamCallback | None,
        deadline: float | None,
    ) -> None:
        async with self.exchange("chat/completions", request, deadline) as body:
            text = await body.text()
        self._absorb_body(text, request, state)
        if on_event is not None:
            for frame in state.frames:
                await on_event(StreamEvent(kind="frame", frame=frame))

    def _absorb_body(self, text: str, request: CompletionRequest, state: _State) -> None:
        try:
            body = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MalformedResponse(
                f"{self.name}: response is not JSON ({exc.msg} at char {exc.pos}): "
                f"{excerpt(text, 120)!r}",
                provider=self.name,
                model=request.model,
            ) from exc
        if not isinstance(body, dict):
            raise MalformedResponse(
                f"{self.name}: response is JSON but not an object",
                provider=self.name,
                model=request.model,
            )
        err = _error_in_body(body, self.name, request.model)
        if err is not None:
            raise err
        choice = _first_choice(body)
        if choice is None:
            raise MalformedResponse(
                f"{self.name}: response has no choices", provider=self.name, model=request.model
            )
        content = _dig(choice, "message", "content")
        state.parts.append(content if isinstance(content, str) else "")
        reason = choice.get("finish_reason")
        state.finish_reason = reason if isinstance(reason, str) else None
        _absorb_meta(body, state)

    async def _stream(
        self,
        request: CompletionRequest,
        state: _State,
        on_event: StreamCallback | None,
        deadline: float | None,
    ) -> None:
        ids = {"provider": self.name, "model": request.model}
        async with self.exchange("chat/completions", request, deadline) as body:
            ctype = body.content_type
            if "text/event-stream" not in ctype and "json" in ctype:
                # A server that ignores `stream: true` answers with one JSON body.
                text = await body.text()
                self._absorb_body(text, request, state)
                if on_event is not None:
                    if state.text:
                        await on_event(StreamEvent(kind="token", text=state.text))
                    for frame in state.frames:
                        await on_event(StreamEvent(kind="frame", frame=frame))
                return
            done = False
            parser = SSEParser()
            # the reader's batches in a plain loop, not an async generator over them: a
            # generator left at ``[DONE]`` is closed by the event loop's finaliser, a task (and
            # a wake-up of the loop through its self-pipe) per call
            while (batch := await body.batch()) is not None:
                events = parser.feed(batch)
                if events and await self._take(events, state, ids, on_event):
                    done = True
                    break
            else:  # the body ended: its last event may lack its blank line
                events = parser.end()
                done = bool(events) and await self._take(events, state, ids, on_event)
            if done:  # read on to the body's end: the connection then stays in the pool
                await body.drain()
            elif state.finish_reason is None:
                raise StreamDropped(
                    f"{self.name}: stream closed before the answer finished "
                    f"({len(state.text)} chars, no finish_reason)",
                    partial=state.text,
                    **ids,
                )

    async def _take(
        self,
        events: list[SSEEvent],
        state: _State,
        ids: dict[str, str],
        on_event: StreamCallback | None,
    ) -> bool:
        """One read's events into ``state``; whether they ended the answer (``[DONE]``).

        The read is parsed before anything is handed on, then its tokens go out as one event
        (its reasoning as another, frames in their place): a 16-frame answer that arrived in
        one read costs the redactor, the meter, the run's event and the sinks once, not 16
        times, and no text waits for the next read. A bad frame still lets the text before it
        out, then raises."""
        out = ReadEvents()
        done = False
        error: ProviderError | None = None
        try:
            for event in events:
                data = event.data
                if data[:1] != "{" and data.strip() == "[DONE]":  # a JSON frame is not the end
                    done = True
                    break
                _absorb_chunk(self._chunk(event, state, ids), event.event, state, out)
        except ProviderError as exc:
            error = exc
        if on_event is not None:
            for ev in out.events:
                await on_event(ev)
        if error is not None:
            raise error
        return done

    def _chunk(self, event: SSEEvent, state: _State, ids: dict[str, str]) -> dict[str, Any]:
        """One SSE event's JSON object; a malformed, cut or error frame raises."""
        try:
            chunk = _json(event.data)
        except json.JSONDecodeError as exc:
            if not event.terminated:
                raise StreamDropped(
                    f"{self.name}: stream ended inside an event after {len(state.text)} chars",
                    partial=state.text,
                    **ids,
                ) from exc
            raise MalformedResponse(
                f"{self.name}: malformed SSE frame ({exc.msg}): {excerpt(event.data, 120)!r}",
                **ids,
            ) from exc
        if not isinstance(chunk, dict):
            raise MalformedResponse(
                f"{self.name}: SSE frame is not a JSON object: {excerpt(event.data, 120)!r}",
                **ids,
            )
        err = _error_in_body(chunk, self.name, ids["model"])
        if err is not None:
            raise err
        return chunk
