"""One way for a test to serve an ASGI app on 127.0.0.1: uvicorn in a daemon thread.

The replay, echo and lying servers subclass :class:`ThreadedASGI` (they are ASGI apps
themselves); the port is picked by the OS unless one is given."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Self

import uvicorn


async def read_body(receive: Callable[[], Awaitable[Any]]) -> bytes:
    """The whole request body from ASGI ``http.request`` messages (a client may send it in parts)."""
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


class ThreadedASGI:
    """Mixin for an ASGI app object: ``start()`` serves it, ``stop()`` ends it, ``port`` is set."""

    port: int = 0
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    def start(self, port: int = 0) -> Self:
        app: Any = self
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="critical",
            lifespan="off",
            access_log=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"{type(self).__name__} did not start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
