"""`loomc serve`: pipelines behind the OpenAI chat-completions API (see ``app.py``).

``serve`` is the one entry the CLI calls: load the project, open the store, resolve the keys,
refuse an unsafe bind, and run uvicorn on a socket bound here (so ``--port 0`` reports the port
the system chose).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loomc.project import Project
    from loomc.serve.app import ServeApp
    from loomc.store import Store
    from loomc.store.otel import OtelExporter

__all__ = ["create_app", "serve"]


def create_app(project: Project, store: Store, **options: object) -> ServeApp:
    from loomc.serve.app import create_app as build

    return build(project, store, **options)  # type: ignore[arg-type]


def serve(
    root: str | Path = ".",
    *,
    policy: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    store: str | Path | None = None,
    log_level: str = "warning",
    on_ready: Callable[[str], None] | None = None,
    otel: bool = False,
    workers: int = 1,
) -> None:
    """Serve the project at ``root`` until interrupted. Raises ``DiagnosticError`` when the
    project does not load, ``ServeConfigError`` for an unsafe or impossible configuration and
    ``StoreError`` when the store cannot be opened — all before anything listens. The store is
    ``store``, else ``$LOOMC_STORE``, else ``ROOT/.loomc/store.db``; ``otel`` (or
    ``OTEL_EXPORTER_OTLP_ENDPOINT``) exports every run as OpenTelemetry spans. ``workers``
    above 1 forks that many server processes on the one socket, sharing the store
    (``workers.py``)."""
    import uvicorn

    from loomc.api.running import open_project
    from loomc.api.tracing import otel_from_env
    from loomc.serve.app import create_app as build
    from loomc.serve.auth import Keys, ServeConfigError, check_bind
    from loomc.serve.workers import run_workers
    from loomc.store import open_store, store_url

    if workers < 1:
        raise ServeConfigError(f"--workers must be at least 1, not {workers}")
    if workers > 1 and not hasattr(os, "fork"):
        raise ServeConfigError("--workers above 1 needs a system with fork (POSIX)")
    project = open_project(root, policy)
    keys = Keys(project.policy.serve)
    check_bind(host, keys)
    telemetry = otel_from_env(otel)
    url_of_store = store_url(store, root, required=True) or ""
    opened = open_store(url_of_store)  # opened (and created) before anything listens
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and without
    # it a response's headers and body (two writes) wait out the client's 40 ms delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        opened.close()
        raise ServeConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = sock.getsockname()[1]
    url = f"http://{host if family == socket.AF_INET else f'[{host}]'}:{bound}"

    def run(store_now: Store, telemetry_now: OtelExporter | None) -> None:
        app = build(project, store_now, keys=keys, telemetry=telemetry_now, own_process=True)
        config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on")
        uvicorn.Server(config).run(sockets=[sock])

    def worker() -> None:  # after the fork: a store connection and an exporter of its own
        run(open_store(url_of_store), otel_from_env(otel))

    if workers > 1:  # nothing holding a connection or a thread crosses the fork
        sock.listen(2048)  # connections wait in the backlog until a worker accepts them
        opened.close()
        if telemetry is not None:
            telemetry.shutdown()
    (on_ready or (lambda u: sys.stderr.write(f"loomc serve: listening on {u}/v1\n")))(url)
    sys.stderr.flush()
    if workers == 1:
        run(opened, telemetry)
    elif run_workers(workers, worker):
        raise ServeConfigError("a worker process exited with an error (its log says why)")
