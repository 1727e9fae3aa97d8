"""One chat request as a loomc run: resolve the model, admit (reserve), run, settle, store.

The server is a client of the public API: it runs prompts with ``loomc.arun`` on a provider pool
it owns, watches the run through event sinks, and keeps budgets in the store's shared ledger.

Budgets: before anything is sent, the run's worst case (the checker's bound, capped by the run's
ceilings) is reserved against the caller's key and the server's daily budgets (``admission``);
a refusal sends nothing. Far from every ceiling the reservation is booked on a lease in memory
and the run is stored behind the response (``leases``, ``behind``); near one it is a reservation
of its own, settled to what the run used in the transaction that stores the run (batched with
other requests': ``commits``) before the response ends. A run that never finishes (the client
went away, the server is stopping) keeps its whole reservation booked: completed work is never
paid twice, and a budget is never overshot.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

import loomc
from loomc.api.tracing import TraceRecorder, stored_run
from loomc.exec.events import EventKind
from loomc.exec.result import RunResult, StopReason
from loomc.ir.model import Pipeline
from loomc.policy.models import ServeSettings
from loomc.project import Project
from loomc.providers.registry import ProviderPool
from loomc.serve.admission import Admission, ceilings
from loomc.serve.answer import AnswerStream
from loomc.serve.auth import Client
from loomc.serve.behind import WriteBehind
from loomc.serve.catalog import AUTO, ServedModel, auto_tier, catalog
from loomc.serve.commits import Ledger
from loomc.serve.heap import Heap
from loomc.serve.leases import Budgets, Ticket
from loomc.serve.metrics import Metrics
from loomc.serve.wire import ApiError, ChatRequest
from loomc.store import Store
from loomc.store.otel import OtelExporter
from loomc.units import Budget, Usage

__all__ = ["AUTO", "Admitted", "ServedModel", "Service", "auto_tier", "catalog", "upstream_failed"]

_RUN_OPTIONS = set(inspect.signature(loomc.arun).parameters)


@dataclass
class Admitted:
    """A request that passed every check and holds its reservation, ready to run."""

    request: ChatRequest
    client: Client
    pipeline: str
    compiled: Pipeline
    ceilings: Budget
    ticket: Ticket | None  # None: no daily budget applies
    started: bool = False


class Service:
    def __init__(
        self,
        project: Project,
        store: Store,
        pool: ProviderPool,
        settings: ServeSettings,
        metrics: Metrics,
        telemetry: OtelExporter | None = None,
    ) -> None:
        self.project, self.store, self.pool = project, store, pool
        self.telemetry = telemetry
        self.settings, self.metrics = settings, metrics
        self.models = catalog(project)
        self._by_id = {m.id: m for m in self.models}
        # built once: a keyword profiler compiles its patterns, ~1 ms a request otherwise
        self.profiler = loomc.make_profiler(project.policy.risk)
        self.ledger = Ledger(store)
        self.behind = WriteBehind(store)
        self.budgets = Budgets(self.ledger, self.behind)
        self.admission = Admission(project, settings, self.budgets)
        self.heap: Heap | None = None  # the collector's setting, in a process of its own

    async def background(self) -> None:
        """The server's background tasks: the trace writer and the idle leases' return."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.behind.run)
            tg.start_soon(self.budgets.keep)

    def store_metrics(self) -> str:
        """``/metrics``' lines on the store's transactions (group commits, leases, the runs
        written behind)."""
        return self.ledger.render([("behind", self.behind)])

    async def close(self) -> None:
        """Give back every lease and write every queued run (the server stops)."""
        with anyio.CancelScope(shield=True):
            await self.budgets.close()
            await self.behind.close()

    async def resolve(self, request: ChatRequest) -> tuple[str, str | None]:
        model = self._by_id.get(request.model)
        if model is None:
            raise ApiError(
                404,
                f"the model {request.model!r} does not exist; GET /v1/models "
                "lists pipeline@tier names",
                code="model_not_found",
                param="model",
            )
        if model.id != AUTO:
            return model.pipeline, model.tier
        tiers = [m.tier for m in self.models if m.pipeline == "general" and m.tier is not None]
        return "general", await auto_tier(self.profiler, request.prompt(), tiers)

    async def run(
        self, request: ChatRequest, client: Client, on_delta: Callable[[str], None] | None = None
    ) -> tuple[RunResult, dict[str, Any]]:
        return await self.execute(await self.admit(request, client), on_delta)

    async def admit(self, request: ChatRequest, client: Client) -> Admitted:
        """Resolve the model, prove the run fits its ceilings and reserve its worst case; every
        refusal (404, 400, 402) happens here, before a stream starts or a model is called."""
        name, tier = await self.resolve(request)
        limits = ceilings(request, client)
        plan = self.admission.plan(name, tier, limits)
        ticket = await self.admission.reserve(client, plan)
        return Admitted(request, client, name, plan.run, limits, ticket)

    async def release(self, admitted: Admitted) -> None:
        """Give back the reservation of an admitted run that never started."""
        if not admitted.started and admitted.ticket is not None:
            admitted.started = True
            with anyio.CancelScope(shield=True):
                await self.budgets.finish(admitted.ticket, Usage(), None)

    async def execute(
        self, admitted: Admitted, on_delta: Callable[[str], None] | None = None
    ) -> tuple[RunResult, dict[str, Any]]:
        """Run an admitted request; ``on_delta`` (streaming) hears the answer's text as it
        grows. Returns once the run is settled and stored."""
        admitted.started = True
        request, client, ticket = admitted.request, admitted.client, admitted.ticket
        memory = TraceRecorder()
        # a JSON reply needs no deltas: its run has one sink fewer to hear every event
        answer = None
        if on_delta is not None:
            # the chain as this tier's graph has it: `general@lean`'s names `final` and `verify`,
            # steps of other tiers, which never settle, and its `direct` would stream nothing
            # until the run ended
            graph = admitted.compiled.graph
            answer = AnswerStream([s for s in admitted.compiled.answer if s in graph], on_delta)
        options: dict[str, Any] = {}
        ignored = []
        for field, value in (
            ("temperature", request.temperature),
            ("max_tokens", request.answer_cap),
        ):
            if value is not None:
                if field in _RUN_OPTIONS:
                    options[field] = value
                else:
                    ignored.append(field)
        result: RunResult | None = None
        started = time.time()
        try:
            result = await loomc.arun(
                request.prompt(),
                project=self.project,
                pipeline=admitted.compiled,
                ceilings=admitted.ceilings,
                providers=self.pool,
                sinks=[memory] if answer is None else [memory, answer],
                profiler=self.profiler,
                stream=on_delta is not None,
                **options,
            )
        finally:
            with anyio.CancelScope(shield=True):
                if result is not None:
                    # an exact reservation: settled with the stored run in one transaction
                    # (with the other requests finishing now) before the response; on a lease
                    # or under no budget: booked in memory, the run written behind
                    stored = stored_run(
                        result,
                        memory.events,
                        source="serve",
                        started=started,
                        key=client.name,
                        extra={"request": {"model": request.model, "user": request.user}},
                    )
                    if ticket is None:
                        await self.behind.put((None, result.budget.used, stored))
                    else:
                        await self.budgets.finish(ticket, result.budget.used, stored)
                    if self.telemetry is not None:
                        self.telemetry.export(stored)
                elif ticket is not None and not _sent(memory):
                    # stopped before any step started: nothing can have been spent
                    await self.budgets.finish(ticket, Usage(), None)
        if answer is not None:
            answer.rest(result.answer)
        self.metrics.run(result)
        if self.heap is not None:
            self.heap.after_run()
        ext: dict[str, Any] = {"run_id": _run_id(memory, result)}
        if ignored:
            ext["ignored"] = ignored
        if answer is not None and answer.diverged:
            ext["stream_diverged"] = True
        return result, ext


def _sent(memory: TraceRecorder) -> bool:
    return any(e.kind is EventKind.STEP_STARTED for e in memory.events)


def _run_id(memory: TraceRecorder, result: RunResult) -> str:
    return memory.events[0].run_id if memory.events else result.receipt_hash


def upstream_failed(result: RunResult) -> bool:
    return result.stop_reason is StopReason.ERROR and not result.answer
