"""A bare pass-through proxy on the stack ``loomc serve`` is built on (run in its own process).

    python benchmarks/serve_bare.py --port 8200 --upstream http://127.0.0.1:8100/v1 --mode raw

uvicorn (its defaults: uvloop and httptools when installed, as ``loomc serve`` gets them) in
front of one ASGI app that forwards ``POST /v1/chat/completions`` to the upstream with an httpx
``AsyncClient`` (streamed) and relays the upstream's bytes as they arrive; nothing else: no
auth, no parsing, no run, no ledger, no trace. ``--mode raw``: a bare ASGI callable;
``--mode starlette``: a Starlette route answering with a ``StreamingResponse``. ``--transport
httpx``: the client's own transport (httpcore's pool, no connection limit); ``--transport
loomc``: the same ``AsyncClient`` on ``loomc.providers.transport.PlainHTTPTransport``, the lean
``http://`` transport ``loomc serve``'s providers use (httpcore's pool costs O(calls in flight)
per call: at 128 it, not the proxy, is what such a server spends its CPU on). This is the
floor under any uvicorn + httpx server's CPU per streamed request: ``serve_ceiling.py`` puts
``loomc serve`` beside it (issue 14: is 0.9 of ideal reachable by such a process at all?).
``GET /healthz`` answers ok.
"""

from __future__ import annotations

import argparse
import socket
from typing import Any

import httpx
import uvicorn

UPSTREAM = ""
TRANSPORT = "httpx"
_CLIENT: httpx.AsyncClient | None = None


def client() -> httpx.AsyncClient:
    global _CLIENT
    if _CLIENT is None:  # made on the server's loop, on the first request
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        transport: httpx.AsyncBaseTransport | None = None
        if TRANSPORT == "loomc":
            from loomc.providers.transport import PlainHTTPTransport

            transport = PlainHTTPTransport(retries=0)
        _CLIENT = httpx.AsyncClient(limits=limits, timeout=60, transport=transport)
    return _CLIENT


async def _open(body: bytes) -> httpx.Response:
    http = client()
    request = http.build_request(
        "POST",
        UPSTREAM + "/chat/completions",
        content=body,
        headers={"content-type": "application/json"},
    )
    return await http.send(request, stream=True)


async def raw(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    if scope["path"] != "/v1/chat/completions":
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"j")]}
        )
        await send({"type": "http.response.body", "body": b'{"status":"ok"}'})
        return
    upstream = await _open(b"".join(parts))
    try:
        kind = upstream.headers.get("content-type", "text/event-stream").encode()
        await send(
            {
                "type": "http.response.start",
                "status": upstream.status_code,
                "headers": [(b"content-type", kind)],
            }
        )
        async for data in upstream.aiter_raw():
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        await upstream.aclose()


def starlette_app() -> Any:
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    async def chat(request: Request) -> Response:
        upstream = await _open(await request.body())
        return StreamingResponse(
            upstream.aiter_raw(),
            status_code=upstream.status_code,
            media_type=upstream.headers.get("content-type", "text/event-stream"),
            background=BackgroundTask(upstream.aclose),
        )

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )


def main() -> None:
    global UPSTREAM, TRANSPORT
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--mode", choices=["raw", "starlette"], default="raw")
    parser.add_argument("--transport", choices=["httpx", "loomc"], default="httpx")
    args = parser.parse_args()
    UPSTREAM, TRANSPORT = args.upstream.rstrip("/"), args.transport
    app = raw if args.mode == "raw" else starlette_app()
    # the socket as `loomc serve` binds it (TCP_NODELAY), so the stacks differ in the app only
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", args.port))
    config = uvicorn.Config(app, log_level="error", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
