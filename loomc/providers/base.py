"""The one async interface every provider adapter implements, and its typed errors.

Exception tree (httpx's habit of drawing it where it is defined; the root of all of loomc's
errors is ``loomc.errors.LoomcError``)::

    ProviderError
    ├── RateLimited          429; carries retry_after_s
    ├── ProviderTimeout      no answer (or no next chunk) in time
    ├── HTTPStatusError      any other non-2xx; .status, .retryable for 5xx
    ├── StreamDropped        connection closed mid-stream; .partial holds what arrived
    ├── ConnectionFailed     the server could not be reached (refused, reset before a reply)
    ├── MalformedResponse    the body or an SSE/NDJSON frame could not be parsed
    │   └── ResponseTooLarge past max_response_bytes (loomc.providers.body)
    └── ProviderConfigError  missing env var, bad base URL (never retried)

Messages never include API keys; adapters build them from status, URL path and a short body
excerpt that has had key-shaped strings redacted (see ``redact``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, Protocol, runtime_checkable

from loomc.errors import LoomcError
from loomc.secrets import (
    REDACTED,
    StreamRedactor,
    redact,
    redact_data,
    redact_secrets,
    register_secret,
)

__all__ = [
    "REDACTED",
    "StreamRedactor",
    "redact",
    "redact_data",
    "redact_secrets",
    "register_secret",
]

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    model: str  # the model id as the provider knows it (the part after "provider/")
    messages: tuple[Message, ...]
    max_tokens: int | None
    stream: bool = True
    temperature: float | None = None
    timeout_s: float | None = None  # per-chunk / connect timeout; the run deadline nests outside
    step_role: str | None = None  # loomc role, used by the mock to pick scripted answers
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TokenUsage:
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False  # True when counted locally because the provider sent none

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class NativeReceipt:
    """What a gateway says it charged (e.g. Dot's ``agent_api_payment.spent_credits``)."""

    spent_credits: Decimal | None = None
    cost_usd: Decimal | None = None
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Completion:
    content: str
    usage: TokenUsage
    finish_reason: str | None = None
    receipt: NativeReceipt | None = None
    latency_ms: int = 0
    frames: tuple[dict[str, Any], ...] = ()  # provider frames worth tracing (privacy, payment)


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """Streamed while a completion is produced: an answer token, a reasoning token (a thinking
    model's ``reasoning_content``/``thinking``: billed, shown, never part of the answer) or a
    provider frame."""

    kind: Literal["token", "reasoning", "frame"]
    text: str = ""
    frame: dict[str, Any] | None = None


StreamCallback = Callable[[StreamEvent], Awaitable[None]]


@runtime_checkable
class Provider(Protocol):
    name: str

    async def complete(
        self, request: CompletionRequest, on_event: StreamCallback | None = None
    ) -> Completion:
        """Send one request; stream events to ``on_event``; return the final completion.

        Raises a ``ProviderError`` subclass on failure. Never retries: retry policy, backoff and
        budget reservation for each attempt belong to the executor.
        """
        ...

    async def aclose(self) -> None: ...


class ProviderError(LoomcError):
    retryable: bool = False

    def __init__(self, message: str, *, provider: str = "", model: str = "") -> None:
        super().__init__(redact(message))
        self.provider = provider
        self.model = model


class RateLimited(ProviderError):
    retryable = True

    def __init__(self, message: str, *, retry_after_s: float | None = None, **kw: str) -> None:
        super().__init__(message, **kw)
        self.retry_after_s = retry_after_s


class ProviderTimeout(ProviderError):
    retryable = True


class HTTPStatusError(ProviderError):
    def __init__(self, message: str, *, status: int, **kw: str) -> None:
        super().__init__(message, **kw)
        self.status = status
        self.retryable = status >= 500 or status in (408, 409)


class StreamDropped(ProviderError):
    retryable = True

    def __init__(self, message: str, *, partial: str = "", **kw: str) -> None:
        super().__init__(message, **kw)
        self.partial = partial


class ConnectionFailed(ProviderError):
    retryable = True


class MalformedResponse(ProviderError):
    retryable = False


class ProviderConfigError(ProviderError):
    retryable = False


def estimate_tokens(text: str) -> int:
    """Conservative local token count (over-counts: ~1 token per 3 chars, min 1 per word)."""
    if not text:
        return 0
    return max(len(text.split()), (len(text.encode("utf-8")) + 2) // 3)
