"""Where finished runs go: the trace store (``loomc traces``, ``loomc calibrate``) and OpenTelemetry.

``loomc run``, ``loomc eval`` and ``loomc serve`` all record a run the same way: the executor's
events are kept in memory while it runs (token deltas left out: the answer is on the result),
and the finished run becomes one :class:`~loomc.store.StoredRun` with its events and receipt.
:class:`Traces` writes them in batches (an eval of thousands of runs pays one transaction per
batch, in a worker thread, not one per run) and hands each to the OpenTelemetry exporter.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from loomc.exec.events import Event, EventKind
from loomc.exec.result import RunResult
from loomc.providers.base import redact
from loomc.store import Store, StoredRun, open_store
from loomc.store.otel import OtelExporter

StoreLike = Store | str | Path
_LEFT_OUT = (EventKind.TOKEN, EventKind.REASONING, EventKind.PROVIDER_FRAME)
BATCH = 64


class TraceRecorder:
    """An event sink keeping one run's events (or many runs', told apart by ``run_id``)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event) -> None:
        if event.kind not in _LEFT_OUT:
            self.events.append(event)


def stored_run(
    result: RunResult,
    events: Sequence[Event],
    *,
    source: str,
    started: float,
    key: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> StoredRun:
    """The store's row for a finished run; ``extra`` is kept on the result under its own keys
    (the request's model for serve, the case and strategy for eval)."""
    kept = [e for e in events if e.kind not in _LEFT_OUT]
    first = next((e for e in kept if e.run_id), None)
    body = result.model_dump(mode="json")
    body.update(extra or {})
    return StoredRun(
        run_id=first.run_id if first else result.receipt_hash,
        ts=first.ts if first else started,
        pipeline=result.pipeline,
        tier=result.tier,
        key=key,
        source=source,
        stop_reason=str(result.stop_reason),
        calls=result.calls,
        tokens=result.tokens,
        credits=None if result.credits is None else str(result.credits),
        cost=None if result.cost is None else str(result.cost),
        elapsed_ms=result.elapsed_ms,
        receipt_hash=result.receipt_hash,
        result=body,
        events=[e.to_json() for e in kept],
    )


def otel_from_env(
    enabled: bool = False, env: Mapping[str, str] | None = None
) -> OtelExporter | None:
    """The OTLP/HTTP exporter when asked (``--otel``) or configured
    (``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set), else None.
    Raises ``OtelUnavailable`` when the ``otel`` extra is not installed."""
    values = os.environ if env is None else env
    configured = any(
        values.get(k) for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )
    if not (enabled or configured) or values.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    return OtelExporter.otlp()


class Traces:
    """Finished runs to a store (batched, in a worker thread) and to an OpenTelemetry exporter.

    ``store`` may be a URL or path, opened here and closed by :meth:`aclose`. A batch is written
    when it fills and when the traces are closed, shielded from cancellation: an interrupted
    eval still stores the runs it finished. A store that fails while writing is reported once
    on stderr and then left alone, like a broken event sink: the runs and results survive."""

    def __init__(
        self, store: StoreLike | None = None, otel: OtelExporter | None = None, batch: int = BATCH
    ) -> None:
        self._own = store is not None and isinstance(store, str | Path)
        self.store: Store | None = open_store(store) if isinstance(store, str | Path) else store
        self.otel = otel
        self.batch = max(1, batch)
        self._pending: list[StoredRun] = []
        self._lock = anyio.Lock()
        self._broken = False

    def __bool__(self) -> bool:
        return self.store is not None or self.otel is not None

    async def add(self, run: StoredRun) -> None:
        if self.otel is not None:
            self.otel.export(run)
        if self.store is None:
            return
        self._pending.append(run)
        if len(self._pending) >= self.batch:
            await self.flush()

    async def flush(self) -> None:
        if self.store is None:
            return
        with anyio.CancelScope(shield=True):
            async with self._lock:
                batch, self._pending = self._pending, []
                if batch and not self._broken:
                    try:
                        await anyio.to_thread.run_sync(self.store.save_runs, batch)
                    except Exception as exc:  # like a broken sink: reported once, never fatal
                        self._broken = True
                        sys.stderr.write(
                            f"loomc: cannot record runs in {self.store.url}: "
                            f"{redact(str(exc))}; later runs are not recorded either\n"
                        )

    async def aclose(self) -> None:
        try:
            await self.flush()
        finally:
            if self.otel is not None:
                self.otel.flush()
            if self._own and self.store is not None:
                self.store.close()
