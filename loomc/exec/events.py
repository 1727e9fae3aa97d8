"""Typed run events and the sinks they go to (live trace, JSONL file, memory).

Events are emitted in order from one run; sinks must not raise into the executor, so a broken
sink (a full disk) is reported once on stderr and then ignored — the run and its result survive.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from loomc.providers.base import redact


class EventKind(StrEnum):
    """What an event reports; the value is the ``kind`` written to traces."""

    RUN_STARTED = "run-started"
    STEP_STARTED = "step-started"
    TOKEN = "token"
    PROVIDER_FRAME = "provider-frame"
    STEP_FINISHED = "step-finished"
    STEP_SKIPPED = "step-skipped"
    STEP_RETRY = "step-retry"
    BUDGET_STOP = "budget-stop"

    RUN_FINISHED = "run-finished"
    REASONING = "reasoning"  # a thinking model's reasoning delta: shown live, never the answer
    WARNING = "warning"  # a checker warning about this run (a worst case above a run limit)


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    run_id: str
    step: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "run_id": self.run_id,
            "step": self.step,
            "ts": round(self.ts, 6),
            "data": self.data,
        }


class EventSink(Protocol):
    async def emit(self, event: Event) -> None: ...


class MemorySink:
    """Keeps every event in ``events``: for tests and for callers that inspect a run after."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event) -> None:
        self.events.append(event)


class JsonlSink:
    """Appends one JSON object per event; flushed per line so an interrupted run keeps its trace."""

    def __init__(self, path: str | Path, tokens: bool = False) -> None:
        self.path = Path(path)
        self.tokens = tokens
        self._broken = False

    async def emit(self, event: Event) -> None:
        streamed = event.kind in (EventKind.TOKEN, EventKind.REASONING)
        if self._broken or (streamed and not self.tokens):
            return
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(redact(json.dumps(event.to_json(), default=str)) + "\n")
        except OSError as exc:
            self._broken = True
            sys.stderr.write(f"loomc: trace file {self.path} not writable: {exc.strerror}\n")
