"""The ASGI application: one factory, a lifespan that owns the provider pool and the store.

Routes: ``/v1/models``, ``/v1/chat/completions`` (JSON or SSE: the bare handler in ``chat.py``,
in front of Starlette), ``/healthz``, ``/metrics``, the Studio. Every error leaves in OpenAI's
shape with its status; an unexpected exception is logged (keys redacted) and answered as a bare
500, never a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from loomc.project import Project
from loomc.providers.base import Provider, redact
from loomc.providers.registry import ProviderPool
from loomc.serve.auth import Keys
from loomc.serve.chat import ChatCompletions
from loomc.serve.heap import Heap
from loomc.serve.heap import render as heap_metrics
from loomc.serve.metrics import Metrics
from loomc.serve.service import Service
from loomc.serve.wire import ApiError
from loomc.store import Store
from loomc.store.otel import OtelExporter
from loomc.studio.app import mount as studio

log = logging.getLogger("loomc.serve")


def create_app(
    project: Project,
    store: Store,
    *,
    providers: Mapping[str, Provider] | None = None,
    keys: Keys | None = None,
    env: Mapping[str, str] | None = None,
    telemetry: OtelExporter | None = None,
    own_process: bool = False,
) -> ServeApp:
    """The server for ``project``; budgets and traces go to ``store``. ``providers`` replace the
    policy's by name (tests inject counting or faulty ones); ``keys`` defaults to the policy's
    ``serve.keys`` resolved from ``env`` (the process environment); ``telemetry`` exports every
    run as OpenTelemetry spans (shut down with the server). ``own_process``: the process is
    this server's alone (``loomc serve``), so its garbage collector is set for it (``heap``)."""
    settings = project.policy.serve
    metrics = Metrics()
    resolved_keys = keys or Keys(settings, env)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with ProviderPool(project.policy) as pool:
            for name, provider in (providers or {}).items():
                pool.put(name, provider)
            app.state.service = svc = Service(project, store, pool, settings, metrics, telemetry)
            if own_process:
                svc.heap = Heap()
                svc.heap.settle()
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(svc.background)
                    try:
                        yield
                    finally:  # leases given back, queued runs written (shielded)
                        tg.cancel_scope.cancel()
                        await svc.close()
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

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "models": len(service(request).models)})

    async def metrics_page(request: Request) -> Response:
        text = metrics.render() + service(request).store_metrics() + heap_metrics()
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

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

    site = Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            # GET and friends: a 405 in OpenAI's shape (POST never reaches Starlette)
            Route("/v1/chat/completions", _never, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", metrics_page, methods=["GET"]),
            studio(project, store, pool=lambda request: service(request).pool),
        ],
        exception_handlers={ApiError: api_error, HTTPException: http_error, Exception: crash},
        lifespan=lifespan,
    )
    return ServeApp(
        site, ChatCompletions(resolved_keys, settings, metrics, lambda: site.state.service)
    )


class ServeApp:
    """The server's ASGI application: ``POST /v1/chat/completions`` to the bare handler, every
    other request (and the lifespan) to the Starlette site."""

    def __init__(self, site: Starlette, chat: ChatCompletions) -> None:
        self.site, self.chat = site, chat
        self.state = site.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == "/v1/chat/completions"
        ):
            await self.chat(scope, receive, send)
        else:
            await self.site(scope, receive, send)


async def _never(request: Request) -> Response:  # pragma: no cover - ServeApp answers POST
    raise HTTPException(405)
