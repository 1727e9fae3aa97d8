"""The state of one run while it executes, shared by the executor and the receipt builder."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio

from loomc.exec.events import Event, EventKind, EventSink
from loomc.exec.guards import Outcome
from loomc.exec.ledger import Ledger
from loomc.exec.prepared import PreparedPipeline
from loomc.exec.result import LimitStop, StepRecord, StopReason
from loomc.ir.model import Pipeline
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfile
from loomc.units import Budget, Usage


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


class RunState:
    """Everything one run knows while it goes: records, outcomes, the stop and its reason.

    A slotted class with its own ``__init__``: a dataclass with a dozen default factories cost
    more to build than the rest of a run's set-up. ``plan`` is the pipeline's fixed part."""

    __slots__ = (
        "_run_id",
        "completed",
        "done",
        "enforced",
        "ledger",
        "limited_by",
        "on_step",
        "order",
        "outcomes",
        "over",
        "pipeline",
        "plan",
        "pool",
        "prompt",
        "records",
        "risk",
        "sent",
        "sinks",
        "started",
        "stop_reason",
        "stream",
        "temperature",
        "undecided",
        "warnings",
    )

    def __init__(
        self,
        plan: PreparedPipeline,
        prompt: str,
        pool: ProviderPool,
        ledger: Ledger,
        sinks: Sequence[EventSink],
        risk: RiskProfile,
        stream: bool,
        temperature: float | None = None,  # overrides every step's (the worker's) temperature
    ) -> None:
        self.plan = plan
        self.pipeline: Pipeline = plan.pipeline
        self.enforced: Budget = plan.enforced
        self.order: list[str] = plan.order  # the topological order: shared, never mutated
        self.prompt, self.pool, self.ledger, self.sinks = prompt, pool, ledger, sinks
        self.risk, self.stream, self.temperature = risk, stream, temperature
        self.outcomes: dict[str, Outcome] = {}
        self.records: dict[str, StepRecord] = {}
        self.done: dict[str, anyio.Event] = {}
        self.stop_reason: StopReason | None = None
        self.over: str | None = None  # how a booked usage passed a ceiling (stops over-ceiling)
        self.undecided: str | None = None  # which guard could not be decided (guard-undecided)
        self.limited_by: LimitStop | None = None
        self.warnings: list[dict[str, object]] = []
        # per step in flight: when it was sent, its prompt estimate and what it streamed so far
        self.sent: dict[str, tuple[float, int, list[str]]] = {}
        self.started = time.monotonic()
        self.completed: Mapping[str, CompletedStep] = {}  # done before a kill
        self.on_step: StepHook | None = None  # hears each completed step, before dependents
        self._run_id: str | None = None

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
