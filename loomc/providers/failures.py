"""A provider's failures as the typed errors the executor's retry policy understands: an HTTP
status (with its ``Retry-After``), a transport failure, a stream dropped after text arrived.

Every message carries at most a short excerpt of the provider's body, redacted before it is cut,
so no key registered with ``redact`` can reach an error, even truncated.
"""

from __future__ import annotations

import contextlib
import email.utils
import time

import httpx

from loomc.providers.base import (
    ConnectionFailed,
    HTTPStatusError,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    StreamDropped,
    redact,
)

_BODY_EXCERPT = 300


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds from ``Retry-After`` (delta or HTTP date) or ``retry-after-ms``; None if absent."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def excerpt(body: str, limit: int = _BODY_EXCERPT) -> str:
    """A one-line excerpt of provider text: redacted first, then cut (never the other way)."""
    text = redact(" ".join(body.split()))
    return text[:limit] + ("…" if len(text) > limit else "")


def status_error(
    response: httpx.Response, body: str, *, provider: str, model: str
) -> ProviderError:
    """Map a non-2xx response to the typed error the executor's retry policy understands."""
    status = response.status_code
    where = f"{provider}: POST {response.request.url.path} -> HTTP {status}"
    detail = excerpt(body)
    message = f"{where}: {detail}" if detail else where
    ids = {"provider": provider, "model": model}
    if status == 429:
        return RateLimited(message, retry_after_s=parse_retry_after(response.headers), **ids)
    if status in (401, 403):
        message += " (check the provider's api_key environment variable)"
    return HTTPStatusError(message, status=status, **ids)


def transport_error(exc: httpx.HTTPError, *, provider: str, model: str) -> ProviderError:
    """httpx's own failures (no HTTP status) as typed provider errors."""
    ids = {"provider": provider, "model": model}
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeout(f"{provider}: no response in time ({type(exc).__name__})", **ids)
    url = ""
    with contextlib.suppress(RuntimeError):
        url = f" {exc.request.url.host}:{exc.request.url.port or ''}"
    return ConnectionFailed(f"{provider}: cannot reach{url}: {type(exc).__name__}: {exc}", **ids)


def failure(exc: httpx.HTTPError, partial: str, *, provider: str, model: str) -> ProviderError:
    """A connection lost after text arrived is a dropped stream (partial kept, retryable)."""
    if partial and isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return StreamDropped(
            f"{provider}: connection dropped mid-stream after {len(partial)} chars "
            f"({type(exc).__name__})",
            partial=partial,
            provider=provider,
            model=model,
        )
    return transport_error(exc, provider=provider, model=model)
