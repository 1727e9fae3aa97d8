"""The ASGI application: one factory, a lifespan that owns the provider pool and the store.

Routes: ``/v1/models``, ``/v1/chat/completions`` (JSON or SSE), ``/healthz``, ``/metrics``.
Every error leaves in OpenAI's shape with its status; an unexpected exception is logged (keys
redacted) and answered as a bare 500, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from loomc.project import Project
from loomc.providers.base import Provider, redact
from loomc.providers.registry import ProviderPool
from loomc.serve.auth import Keys
from loomc.serve.metrics import Metrics
from loomc.serve.service import Admitted, Service, upstream_failed
from loomc.serve.wire import (
    ApiError,
    chunk,
    completion_body,
    completion_id,
    extension,
    finish_reason,
    parse_request,
    usage,
)
from loomc.store import Store
from loomc.store.otel import OtelExporter
from loomc.studio.app import mount as studio
from loomc.studio.sse import EventStream, Write, frame

log = logging.getLogger("loomc.serve")
_HOLE = "\x00loomc-delta\x00"  # a placeholder for a content delta's text


def create_app(
    project: Project,
    store: Store,
    *,
    providers: Mapping[str, Provider] | None = None,
    keys: Keys | None = None,
    env: Mapping[str, str] | None = None,
    telemetry: OtelExporter | None = None,
) -> Starlette:
    """The server for ``project``; budgets and traces go to ``store``. ``providers`` replace the
    policy's by name (tests inject counting or faulty ones); ``keys`` defaults to the policy's
    ``serve.keys`` resolved from ``env`` (the process environment); ``telemetry`` exports every
    run as OpenTelemetry spans (shut down with the server)."""
    settings = project.policy.serve
    metrics = Metrics()
    resolved_keys = keys or Keys(settings, env)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with ProviderPool(project.policy) as pool:
            for name, provider in (providers or {}).items():
                pool.put(name, provider)
            app.state.service = Service(project, store, pool, settings, metrics, telemetry)
            try:
                yield
            finally:
                store.close()
                if telemetry is not None:
                    telemetry.shutdown()

    def service(request: Request) -> Service:
        svc: Service = request.app.state.service
        return svc

    async def models(request: Request) -> Response:
        resolved_keys.authenticate(request.headers.get("authorization"))
        data = [
            {"id": m.id, "object": "model", "created": 0, "owned_by": "loomc"}
            for m in service(request).models
        ]
        return JSONResponse({"object": "list", "data": data})

    async def chat(request: Request) -> Response:
        client = resolved_keys.authenticate(request.headers.get("authorization"))
        body = await _read_json(request, settings.max_body_bytes)
        chat_request = parse_request(body)
        svc = service(request)
        try:
            admitted = await svc.admit(chat_request, client)
            if chat_request.stream:
                metrics.request(200)
                return EventStream(lambda write: _stream(svc, admitted, write))
            result, extra = await svc.execute(admitted)
        except ApiError:
            raise
        except Exception as exc:  # answered as a bare 500; logged without keys or traceback
            log.error("internal error: %s", redact(repr(exc)))
            raise ApiError(500, "internal server error", type="server_error") from None
        if upstream_failed(result):
            raise _upstream(result.error)
        ext = extension(result, **extra)
        metrics.request(200)
        return JSONResponse(completion_body(completion_id(), chat_request.model, result, ext))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "models": len(service(request).models)})

    async def metrics_page(request: Request) -> Response:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        metrics.request(exc.status)
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        return await api_error(request, ApiError(exc.status_code, str(exc.detail), code=code))

    async def crash(request: Request, exc: Exception) -> Response:
        log.error("internal error on %s: %s", request.url.path, redact(repr(exc)))
        return await api_error(request, ApiError(500, "internal server error", type="server_error"))

    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", metrics_page, methods=["GET"]),
            studio(project, store, pool=lambda request: service(request).pool),
        ],
        exception_handlers={ApiError: api_error, HTTPException: http_error, Exception: crash},
        lifespan=lifespan,
    )


async def _read_json(request: Request, limit: int) -> Any:
    """The body parsed as JSON; over ``limit`` bytes is refused before it is read whole."""
    declared = request.headers.get("content-length")
    too_large = ApiError(413, f"request body over {limit} bytes", code="request_too_large")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    data = bytearray()
    async for part in request.stream():
        data += part
        if len(data) > limit:
            raise too_large
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not valid JSON", code="invalid_json") from None


def _upstream(error: str | None) -> ApiError:
    return ApiError(
        502,
        f"every upstream call failed: {error or 'no answer'}",
        type="upstream_error",
        code="upstream_failed",
    )


async def _stream(svc: Service, admitted: Admitted, write: Write) -> None:
    """One SSE stream: a role chunk, content deltas as the answer arrives, the finish chunk with
    the ``loomc`` object, the usage chunk when asked, then ``[DONE]``. Errors after the stream
    started travel as an ``error`` event, as OpenAI's own streams do."""
    request = admitted.request
    cid, created, model = completion_id(), int(time.time()), request.model
    with_usage = bool(request.stream_options and request.stream_options.include_usage)
    send, receive = anyio.create_memory_object_stream[str](math.inf)
    outcome: list[Any] = []

    def delta(text: str) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            send.send_nowait(text)

    async def produce() -> None:
        with send:  # closing it ends the loop below
            try:
                outcome.append(await svc.execute(admitted, delta))
            except ApiError as exc:
                outcome.append(exc)
            except Exception as exc:  # the stream has started: an error event, never a traceback
                log.error("internal error: %s", redact(repr(exc)))
                outcome.append(ApiError(500, "internal server error", type="server_error"))

    # a content chunk is the same JSON but for its text: built once, the text spliced in (the
    # last match: the client's model name comes before the content)
    head, _, tail = frame(
        chunk(cid, model, created, {"content": _HOLE}, with_usage=with_usage)
    ).rpartition(json.dumps(_HOLE))
    try:
        await write(
            chunk(cid, model, created, {"role": "assistant", "content": ""}, with_usage=with_usage)
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            with receive:
                async for text in receive:
                    await write(head + json.dumps(text) + tail)
    finally:
        await svc.release(admitted)  # a no-op unless the client left before the run began
    if isinstance(outcome[0], ApiError):
        await write(outcome[0].body())
        await write("[DONE]")
        return
    result, extra = outcome[0]
    if upstream_failed(result):
        await write(_upstream(result.error).body())
        await write("[DONE]")
        return
    ext = extension(result, **extra)
    await write(
        chunk(cid, model, created, {}, finish_reason(result), with_usage=with_usage, loomc=ext)
    )
    if with_usage:
        await write(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "system_fingerprint": None,
                "usage": usage(result),
                "loomc": ext,
            }
        )
    await write("[DONE]")
