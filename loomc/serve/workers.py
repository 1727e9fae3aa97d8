"""``loomc serve --workers N``: N processes serving one listening socket, sharing one store.

Why: one Python process runs one request's work at a time; at 128 streaming clients a server
is bound by its CPU per request (benchmarks/README, issue 14), so a second core needs a second
process. The socket is bound once, before the fork (``--port 0`` still reports one port), and
every worker accepts on it; the kernel hands each new connection to one of them. Budgets stay
exact across workers because the store is shared and already safe across processes: a
SQLite reservation is one ``BEGIN IMMEDIATE`` transaction on the file, a PostgreSQL one holds
per-scope advisory locks (the same guarantee that lets replicas share a store).

Each worker opens its own store connection and builds its own app (provider pool, metrics,
group commit) after the fork: nothing that holds a connection, a thread or an event loop
crosses it. ``/metrics`` is per worker. The parent only waits: SIGINT and SIGTERM are passed
on to every worker, each of which shuts down gracefully as a single server does, and the
parent returns once all have exited. POSIX only (fork).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from types import FrameType

_STOPPED = (0, -signal.SIGINT, -signal.SIGTERM)  # exit codes of a worker that was stopped


def run_workers(workers: int, serve_one: Callable[[], None]) -> int:
    """Fork ``workers`` processes each running ``serve_one`` (which returns when its server
    stops); wait for all of them. Returns how many exited with an error."""
    children: list[int] = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # the worker: serve, then leave without running the parent's cleanup
            code = 1
            try:
                # its own process group: a terminal's Ctrl-C reaches the parent alone, which
                # passes it on once (twice would make uvicorn skip its graceful shutdown)
                os.setpgid(0, 0)
                serve_one()
                code = 0
            finally:
                os._exit(code)
        children.append(pid)

    def forward(signum: int, _frame: FrameType | None) -> None:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(pid, signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    failed = 0
    try:
        for pid in children:
            _, status = os.waitpid(pid, 0)
            # uvicorn raises the signal it stopped on again once it has shut down
            failed += os.waitstatus_to_exitcode(status) not in _STOPPED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return failed
