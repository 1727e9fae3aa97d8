"""The OpenAI chat-completions wire format: the request we accept, the bodies we send back.

Field names and shapes follow the ``openai`` Python client's types
(``openai/types/chat/chat_completion.py``, ``chat_completion_chunk.py``, ``completion_usage.py``)
so that client — and anything speaking the same format — works unchanged. loomc's own facts ride
in one extension object, ``loomc``, which OpenAI clients keep as an extra field.

Messages become one prompt (the run API takes one): a lone user message is the prompt verbatim;
anything else is written as ``System:`` / ``User:`` / ``Assistant:`` sections in order, separated
by blank lines, so the pipeline sees the whole conversation and who said what.
"""

from __future__ import annotations

import time
import uuid
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from loomc.exec.result import RunResult, StopReason


class ApiError(Exception):
    """An error answered in OpenAI's shape: ``{"error": {message, type, param, code}}``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type = status, message, type
        self.code, self.param, self.headers = code, param, headers or {}

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[ContentPart] | None = None
    name: str | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        parts = []
        for part in self.content:
            if part.type != "text" or part.text is None:
                raise ValueError(f"content parts of type {part.type!r} are not supported")
            parts.append(part.text)
        return "".join(parts)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class LoomcOptions(BaseModel):
    """Request-level ceilings: they can only tighten the pipeline's, the tier's and the key's."""

    model_config = ConfigDict(extra="forbid")
    max_calls: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    max_credits: Decimal | None = Field(None, ge=0)
    max_cost: Decimal | None = Field(None, ge=0)
    max_latency_ms: int | None = Field(None, ge=1)


class ChatRequest(BaseModel):
    # Unknown OpenAI parameters (top_p, seed, ...) are accepted and have no effect, as most
    # OpenAI-compatible servers do; the ones that would change the answer's shape are refused.
    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    user: str | None = Field(None, max_length=256)
    n: int = Field(1, ge=1, le=1)
    loomc: LoomcOptions = Field(default_factory=LoomcOptions)

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model must not be empty")
        return value

    def prompt(self) -> str:
        texts = [(m.role, m.text()) for m in self.messages]
        if len(texts) == 1 and texts[0][0] == "user":
            return texts[0][1]
        label = {
            "system": "System",
            "developer": "System",
            "user": "User",
            "assistant": "Assistant",
        }
        return "\n\n".join(f"{label[role]}:\n{text}" for role, text in texts if text.strip())

    @property
    def answer_cap(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


_UNSUPPORTED = (
    "tools",
    "functions",
    "tool_choice",
    "function_call",
    "response_format",
    "audio",
    "logprobs",
    "prediction",
)


def parse_request(body: Any) -> ChatRequest:
    """The request, or an ``ApiError`` naming the first bad parameter."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    for name in _UNSUPPORTED:
        if body.get(name) not in (None, False, [], {}):
            raise ApiError(
                400,
                f"{name!r} is not supported by loomc serve",
                param=name,
                code="unsupported_parameter",
            )
    try:
        request = ChatRequest.model_validate(body)
        request.prompt()
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise ApiError(
            400,
            f"{param}: {first['msg']}" if param else first["msg"],
            param=param,
            code="invalid_value",
        ) from None
    except ValueError as exc:
        raise ApiError(400, str(exc), param="messages", code="invalid_value") from None
    if not request.prompt().strip():
        raise ApiError(400, "the messages hold no text", param="messages", code="invalid_value")
    return request


def completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex


def finish_reason(result: RunResult) -> str:
    limited = result.stop_reason.dimension is not None
    return "length" if limited or result.stop_reason is StopReason.INPUT_TOO_LARGE else "stop"


def usage(result: RunResult) -> dict[str, int]:
    """Every call of the run summed, as ``CompletionUsage``."""
    prompt = sum(s.usage.prompt_tokens for s in result.steps)
    completion = sum(s.usage.completion_tokens for s in result.steps)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def extension(result: RunResult, **extra: Any) -> dict[str, Any]:
    """The ``loomc`` object: what OpenAI's format has no field for."""
    return {
        "pipeline": result.pipeline,
        "tier": result.tier,
        "calls": result.calls,
        "escalated": result.escalated,
        "escalation_reason": result.escalation_reason,
        "stop_reason": str(result.stop_reason),
        "credits": None if result.credits is None else str(result.credits),
        "estimated_credits": str(result.estimated_credits),
        "cost": None if result.cost is None else str(result.cost),
        "receipt_hash": result.receipt_hash,
        "elapsed_ms": result.elapsed_ms,
        "estimated_usage": any(s.usage.estimated for s in result.steps),
        **extra,
    }


def completion_body(cid: str, model: str, result: RunResult, ext: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result.answer, "refusal": None},
                "finish_reason": finish_reason(result),
                "logprobs": None,
            }
        ],
        "usage": usage(result),
        "system_fingerprint": None,
        "loomc": ext,
    }


def chunk(
    cid: str,
    model: str,
    created: int,
    delta: dict[str, Any],
    finish: str | None = None,
    with_usage: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        "system_fingerprint": None,
    }
    if with_usage:
        body["usage"] = None  # OpenAI sends null on every chunk but the last when asked for usage
    body.update(extra)
    return body
