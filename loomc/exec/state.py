"""The state of one run while it executes, shared by the executor and the receipt builder."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import anyio

from loomc.exec.events import Event, EventKind, EventSink
from loomc.exec.guards import Outcome
from loomc.exec.ledger import Ledger
from loomc.exec.result import LimitStop, StepRecord, StopReason
from loomc.ir.model import Pipeline
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfile
from loomc.units import Budget, Usage

# One generator for every run's backoff jitter: seeding a fresh one per run costs more than the
# rest of the run's set-up, and jitter needs no independence between runs.
_JITTER = random.Random()


@dataclass(frozen=True)
class CompletedStep:
    """A step that completed (status ok) and what the ledger booked for it, every attempt
    included: journaled by an eval so that a resumed run takes it as done, never sends it
    again, and books its usage on the run's own ledger only."""

    record: StepRecord
    booked: Usage
    # the run ledger's peak (reservations in flight + settled) when the step completed: a
    # resumed run's receipt reports the peak its first process reached, not only its own
    peak: Usage | None = None


StepHook = Callable[[CompletedStep], Awaitable[None] | None]


@dataclass
class RunState:
    """Everything one run knows while it goes: records, outcomes, the stop and its reason."""

    pipeline: Pipeline
    prompt: str
    pool: ProviderPool
    ledger: Ledger
    sinks: Sequence[EventSink]
    risk: RiskProfile
    stream: bool
    order: list[str]  # the graph's topological order, computed once per run
    temperature: float | None = None  # overrides every step's (the worker's) temperature
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    records: dict[str, StepRecord] = field(default_factory=dict)
    done: dict[str, anyio.Event] = field(default_factory=dict)
    stop_reason: StopReason | None = None
    over: str | None = None  # how a booked usage passed a ceiling (the run stops over-ceiling)
    limited_by: LimitStop | None = None
    warnings: list[dict[str, object]] = field(default_factory=list)
    # per step in flight: when it was sent, its prompt estimate and what it streamed so far
    sent: dict[str, tuple[float, int, list[str]]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    rng: random.Random = field(default_factory=lambda: _JITTER)  # backoff jitter only
    completed: Mapping[str, CompletedStep] = field(default_factory=dict)  # done before a kill
    on_step: StepHook | None = None  # hears each step that completes, before dependents start
    enforced: Budget = field(default_factory=Budget)  # pipeline.enforced, computed once per run
    _run_id: str | None = None

    @property
    def run_id(self) -> str:
        """The id events carry; drawn on the first event (a run no sink hears needs none)."""
        if self._run_id is None:
            self._run_id = uuid.uuid4().hex[:12]
        return self._run_id

    async def emit(self, kind: EventKind, step: str | None = None, **data: object) -> None:
        if not self.sinks:
            return
        event = Event(kind, self.run_id, step, dict(data))
        for sink in self.sinks:
            try:
                await sink.emit(event)
            except Exception:
                continue
