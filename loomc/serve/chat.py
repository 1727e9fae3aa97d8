"""``POST /v1/chat/completions`` as a bare ASGI handler: the one route on the hot path.

Why not a Starlette route like the others: its router, ``Request`` object, exception
middleware and response classes cost ~0.3 ms of CPU per request, a third of the budget for the
whole server's overhead (issue 14). Here the request is read straight from ASGI messages, the
reply built from precomputed header lists and compact JSON, and every other path still goes to
Starlette (``app.py``), which keeps the Studio, ``/v1/models``, ``/metrics`` and error pages.

Streaming writes as few times as it can, delaying a byte by at most a turn of the event loop:
the response head at once (the client knows the stream is live); then the role chunk with the
first content deltas (OpenAI's own streams make it with the first token; sent alone it was a
write with nothing for the client to show); every delta queued until the writer runs as one
socket write (an upstream's burst of chunks is one write instead of one each: at 128 streams a
loopback write costs more CPU than the chunk's JSON); and the finish, usage and ``[DONE]``
frames together in the last one, with whatever is still queued. The writer takes the queue one
turn of the loop after the first delta woke it, so a run whose answer arrived in one read and
that ends within that turn is the head and one write (four writes before). A client that hangs
up cancels the run (its reservation keeps what was used booked), exactly as Starlette's
streaming response did.

The stream's helpers are plain asyncio, not an anyio task group: spawning tasks into a group,
cancelling the group (anyio formats the current task's repr into every cancel reason) and
leaving it cost ~0.1-0.2 ms of CPU a request at 128 streams, a quarter of the serving layer's
own work (benchmarks/README.md, serve11). ``watch`` (the client's hang-up) is a task; the
writer is two loop callbacks after the first queued delta and a task only for a write made
while the run goes on (serve13: a run whose answer arrives in one read makes none, where a
writer task woke twice for nothing). Only the run keeps an anyio cancel scope, which the run's
shielded settlement needs. So this handler runs on asyncio, as uvicorn (``loomc serve``) does.

Errors leave in OpenAI's shape with their status; anything unexpected is logged without keys
or traceback and answered as a bare 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
from starlette.types import Receive, Scope, Send

from loomc.policy.models import ServeSettings
from loomc.providers.base import redact
from loomc.serve.auth import Keys
from loomc.serve.frames import Frames, sse
from loomc.serve.metrics import Metrics
from loomc.serve.service import Admitted, Service, upstream_failed
from loomc.serve.wire import (
    ApiError,
    completion_body,
    completion_id,
    extension,
    finish_reason,
    parse_request,
    usage,
)

log = logging.getLogger("loomc.serve")

_JSON = [(b"content-type", b"application/json")]
_SSE = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_DONE = b"data: [DONE]\n\n"


def dumps(body: Any) -> bytes:
    """Compact JSON as Starlette's ``JSONResponse`` renders it (UTF-8, no NaN)."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


async def respond(
    send: Send, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    length = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": _JSON + length + extra})
    await send({"type": "http.response.body", "body": body})


def upstream_error(error: str | None) -> ApiError:
    return ApiError(
        502,
        f"every upstream call failed: {error or 'no answer'}",
        type="upstream_error",
        code="upstream_failed",
    )


def internal(exc: BaseException) -> ApiError:
    log.error("internal error: %s", redact(repr(exc)))
    return ApiError(500, "internal server error", type="server_error")


class ChatCompletions:
    """The ASGI handler; ``service`` gives the running server's :class:`Service` (made in the
    app's lifespan)."""

    def __init__(
        self, keys: Keys, settings: ServeSettings, metrics: Metrics, service: Callable[[], Service]
    ) -> None:
        self.keys, self.metrics, self.service = keys, metrics, service
        self.limit = settings.max_body_bytes

    async def error(self, send: Send, exc: ApiError) -> None:
        self.metrics.request(exc.status)
        await respond(send, exc.status, dumps(exc.body()), exc.headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        svc = self.service()
        svc.ledger.in_flight += 1  # a request alone commits its writes without waiting
        try:
            await self.handle(svc, scope, receive, send)
        finally:
            svc.ledger.in_flight -= 1

    async def handle(self, svc: Service, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            client = self.keys.authenticate(header(scope, b"authorization"))
            body = await read_body(scope, receive, self.limit)
            if body is None:
                return  # the client left before it finished sending: nobody to answer
            request = parse_request(loads(body))
            admitted = await svc.admit(request, client)
        except ApiError as exc:
            await self.error(send, exc)
            return
        except Exception as exc:  # answered as a bare 500; logged without keys or traceback
            await self.error(send, internal(exc))
            return
        if request.stream:
            self.metrics.request(200)
            await stream(svc, admitted, receive, send)
            return
        try:
            result, extra = await svc.execute(admitted)
            if upstream_failed(result):
                raise upstream_error(result.error)
            reply = dumps(
                completion_body(completion_id(), request.model, result, extension(result, **extra))
            )
        except ApiError as exc:
            await self.error(send, exc)
            return
        except Exception as exc:
            await self.error(send, internal(exc))
            return
        self.metrics.request(200)
        await respond(send, 200, reply)


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The whole body (None when the client hung up first); over ``limit`` bytes is refused
    before it is read whole, and at once when its declared length says so."""
    too_large = ApiError(413, f"request body over {limit} bytes", code="request_too_large")
    declared = header(scope, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None  # http.disconnect
        part = message.get("body", b"")
        size += len(part)
        if size > limit:
            raise too_large
        parts.append(part)
        if not message.get("more_body", False):
            return parts[0] if len(parts) == 1 else b"".join(parts)


def loads(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not valid JSON", code="invalid_json") from None


async def stream(svc: Service, admitted: Admitted, receive: Receive, send: Send) -> None:
    """One SSE stream: a role chunk, content deltas as the answer arrives, the finish chunk with
    the ``loomc`` object, the usage chunk when asked, then ``[DONE]``. Errors after the stream
    started travel as an ``error`` event, as OpenAI's own streams do."""
    request = admitted.request
    cid, created, model = completion_id(), int(time.time()), request.model
    with_usage = bool(request.stream_options and request.stream_options.include_usage)
    frames = Frames(cid, model, created, with_usage)
    queued = [frames.role()]  # leaves with the first delta (or the last frames)
    loop = asyncio.get_running_loop()
    ended = False  # the run is over: nothing more is written mid-run, the rest leaves last
    due = False  # a write is scheduled for the turn after next
    broken = False  # a write failed: nothing more is written
    writing: asyncio.Task[None] | None = None  # the write in flight: never cut off mid-way

    def delta(text: str) -> None:
        nonlocal due
        queued.append(frames.delta(text))
        if not due and writing is None:
            due = True
            loop.call_soon(loop.call_soon, flush)

    def flush() -> None:
        # two turns after the first queued delta: a run that ends meanwhile (its answer
        # arrived in one read) sends these deltas with its last frames, one write instead of two
        nonlocal due, writing
        due = False
        if ended or broken or writing is not None or not queued:
            return
        data = b"".join(queued)
        queued.clear()
        writing = loop.create_task(write(data))

    async def write(data: bytes) -> None:
        nonlocal writing, broken, due
        try:
            await send({"type": "http.response.body", "body": data, "more_body": True})
        except OSError:  # uvicorn's ClientDisconnected: `watch` ends the stream
            broken = True
        except Exception as exc:  # logged without a traceback; the stream ends, as a
            internal(exc)  # task group's error ended it: never a stream missing a delta
            broken = True
            run.cancel()
        finally:
            writing = None
            if queued and not (ended or broken or due):  # arrived while this one was written
                due = True
                loop.call_soon(flush)

    run = anyio.CancelScope()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        run.cancel()  # the client hung up: the run stops, its usage stays booked

    outcome: tuple[Any, dict[str, Any]] | ApiError | None = None
    watching: asyncio.Task[None] | None = None
    try:
        await send({"type": "http.response.start", "status": 200, "headers": _SSE})
        watching = loop.create_task(watch())
        with run:
            try:
                outcome = await svc.execute(admitted, delta)
            except ApiError as exc:
                outcome = exc
            except Exception as exc:  # the stream has started: an error event, no traceback
                outcome = internal(exc)
    except OSError:  # uvicorn's ClientDisconnected: the client went away mid-write
        outcome = None
    finally:
        ended = True
        if watching is not None:
            watching.cancel()
        if writing is not None:
            with anyio.CancelScope(shield=True):  # taken from the queue: never half lost
                await writing
        await svc.release(admitted)  # a no-op unless the client left before the run began
    if outcome is None:
        return  # cancelled by the client's leaving: nobody to write to
    last = b"".join(queued)
    if isinstance(outcome, ApiError):
        last += sse(outcome.body())
    else:
        result, extra = outcome
        if upstream_failed(result):
            last += sse(upstream_error(result.error).body())
        else:
            last += frames.last(finish_reason(result), usage(result), extension(result, **extra))
    with contextlib.suppress(OSError):  # uvicorn's ClientDisconnected
        await send({"type": "http.response.body", "body": last + _DONE, "more_body": False})
