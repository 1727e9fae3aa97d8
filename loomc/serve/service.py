"""One chat request as a loomc run: resolve the model, reserve the budget, run, settle, store.

The server is a client of the public API: it runs prompts with ``loomc.arun`` on a provider pool
it owns, watches the run through event sinks, and keeps budgets in the store's shared ledger.

Budgets: before anything is sent, the run's worst case (the checker's bound, capped by the run's
ceilings) is reserved in one transaction against the caller's key and the server's daily
budgets; a refusal sends nothing. After the run the reservation is settled to what the run used.
A run that never finishes (the client went away, the server is stopping) keeps its whole
reservation booked: completed work is never paid twice, and a budget is never overshot.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import anyio

import loomc
from loomc.api.tracing import TraceRecorder, stored_run
from loomc.checker.worstcase import worst_case
from loomc.diagnostics import DiagnosticError
from loomc.exec.events import Event, EventKind
from loomc.exec.result import RunResult, StepStatus, StopReason
from loomc.exec.schedule import profile
from loomc.ir.model import Pipeline
from loomc.policy.models import ServeSettings
from loomc.project import Project
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfiler, tier_for_level
from loomc.serve.auth import Client
from loomc.serve.metrics import Metrics
from loomc.serve.wire import ApiError, ChatRequest
from loomc.store import BudgetExhausted, Scope, Store, StoredRun, today
from loomc.store.otel import OtelExporter
from loomc.units import Budget, Usage

AUTO = "auto"
_RUN_OPTIONS = set(inspect.signature(loomc.arun).parameters)


@dataclass(frozen=True, slots=True)
class ServedModel:
    id: str
    pipeline: str
    tier: str | None


def catalog(project: Project) -> list[ServedModel]:
    """Every pipeline x tier that compiles and checks (what `loomc check` proves), and ``auto``
    when the default pipeline is among them."""
    compiled, _ = project.pipelines()
    served: list[ServedModel] = []
    for p in compiled:
        try:
            project.compile(p.name, p.tier)
        except DiagnosticError:
            continue
        served.append(
            ServedModel(p.name if p.tier is None else f"{p.name}@{p.tier}", p.name, p.tier)
        )
    if any(m.pipeline == "general" and m.tier for m in served):
        served.append(ServedModel(AUTO, "general", None))
    return served


async def auto_tier(profiler: RiskProfiler, prompt: str, tiers: Sequence[str]) -> str:
    """``auto``: the risk profile picks the tier of ``general`` (the rule: ``tier_for_level``).
    A semantic profiler's forward pass runs off the event loop, as in a run."""
    return tier_for_level((await profile(profiler, prompt, "general")).level, tiers)


class AnswerStream:
    """An event sink that turns the answering step's tokens into content deltas.

    The pipeline's answer is the first step of its ``answer`` chain that completes; a step's
    text is sent only once every step before it in the chain is settled without an answer, so
    a draft that a later verifier replaces is never streamed. What was sent is always a prefix
    of one step's text; :meth:`rest` sends what the final answer adds to it.
    """

    def __init__(self, chain: Sequence[str], send: Callable[[str], None]) -> None:
        self.chain = list(chain)
        self.send = send
        self.text: dict[str, str] = dict.fromkeys(self.chain, "")
        self.out: set[str] = set()
        self.sent = ""
        self.diverged = False

    def _front(self) -> str | None:
        return next((s for s in self.chain if s not in self.out), None)

    def _flush(self) -> None:
        front = self._front()
        if front is None:
            return
        target = self.text[front]
        if target.startswith(self.sent) and len(target) > len(self.sent):
            self.send(target[len(self.sent) :])
            self.sent = target

    async def emit(self, event: Event) -> None:
        step = event.step
        if step not in self.text:
            return
        if event.kind is EventKind.TOKEN:
            self.text[step] += str(event.data.get("text", ""))
        elif event.kind is EventKind.STEP_RETRY:
            self.text[step] = ""  # the next attempt starts over
        elif event.kind in (EventKind.STEP_SKIPPED, EventKind.BUDGET_STOP) or (
            event.kind is EventKind.STEP_FINISHED and event.data.get("status") != StepStatus.OK
        ):
            self.out.add(step)
        self._flush()

    def rest(self, answer: str) -> None:
        if answer.startswith(self.sent):
            if len(answer) > len(self.sent):
                self.send(answer[len(self.sent) :])
                self.sent = answer
        else:
            self.diverged = True


def _ceilings(request: ChatRequest, client: Client) -> Budget:
    opts = request.loomc
    asked = Budget(
        calls=opts.max_calls,
        tokens=opts.max_tokens,
        credits=opts.max_credits,
        cost=opts.max_cost,
        latency_ms=opts.max_latency_ms,
    )
    return asked if client.key is None else asked.tighten(client.key.per_run.budget())


def _reservation(pipeline: Pipeline) -> tuple[Usage, bool, bool]:
    """The most the run can spend: the checker's worst case, capped by the run's ceilings; and
    whether its tokens, its cost have no bound at all."""
    worst, limit = worst_case(pipeline), pipeline.budget

    def cap(bound: int | Decimal | None, ceiling: int | Decimal | None) -> Any:
        options = [v for v in (bound, ceiling) if v is not None]
        return min(options) if options else None

    tokens, cost = cap(worst.tokens, limit.tokens), cap(worst.cost, limit.cost)
    return (
        Usage(
            calls=cap(worst.calls, limit.calls) or 0,
            tokens=tokens or 0,
            credits=cap(worst.credits, limit.credits) or Decimal(0),
            cost=cost or Decimal(0),
        ),
        tokens is None,
        cost is None,
    )


PLAN_CACHE_SIZE = 64


@dataclass(frozen=True, slots=True)
class _Plan:
    run: Pipeline  # checked as `loomc check` proves it; the request's ceilings are its limits
    amount: Usage  # the worst case under the request's ceilings: what is reserved
    tokens_open: bool
    cost_open: bool


@dataclass
class Admitted:
    """A request that passed every check and holds its reservation, ready to run."""

    request: ChatRequest
    client: Client
    pipeline: str
    compiled: Pipeline
    ceilings: Budget
    reservation: str | None
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
        self._plans: dict[tuple[str, str | None, Budget], _Plan] = {}
        self._scope_cache: dict[str | None, list[Scope]] = {}

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

    def _scopes(self, client: Client) -> list[Scope]:
        """The budgets a request of ``client`` reserves in: fixed by the policy, built once."""
        scopes = self._scope_cache.get(client.name)
        if scopes is None:
            scopes = self._scope_cache[client.name] = self._build_scopes(client)
        return scopes

    def _build_scopes(self, client: Client) -> list[Scope]:
        scopes = []
        if client.key is not None and client.key.per_day.budget() != Budget():
            scopes.append(Scope(f"key:{client.key.name}", client.key.per_day.budget()))
        if self.settings.per_day.budget() != Budget():
            scopes.append(Scope("global", self.settings.per_day.budget()))
        return scopes

    async def run(
        self, request: ChatRequest, client: Client, on_delta: Callable[[str], None] | None = None
    ) -> tuple[RunResult, dict[str, Any]]:
        return await self.execute(await self.admit(request, client), on_delta)

    async def admit(self, request: ChatRequest, client: Client) -> Admitted:
        """Resolve the model, prove the run fits its ceilings and reserve its worst case; every
        refusal (404, 400, 402) happens here, before a stream starts or a model is called."""
        name, tier = await self.resolve(request)
        ceilings = _ceilings(request, client)
        plan = self._plan(name, tier, ceilings)
        reservation = await self._reserve(client, plan)
        return Admitted(request, client, name, plan.run, ceilings, reservation)

    def _plan(self, name: str, tier: str | None, ceilings: Budget) -> _Plan:
        """The pipeline x tier proved under the request's ceilings, the checked pipeline to run
        and its worst-case reservation: compiled and checked once per (pipeline, tier,
        ceilings), not on every request (a bounded LRU: clients choose the ceilings)."""
        key = (name, tier, ceilings)
        plan = self._plans.pop(key, None)
        if plan is None:
            try:
                bounded = self.project.compile(name, tier, ceilings)
                run = self.project.compile(name, tier)
            except DiagnosticError as exc:
                first = exc.diagnostics[0]
                # the checker names the command line as the ceilings' source; here it is the
                # request's `loomc` object or the key's per-run ceilings
                message = first.message.replace("(command line)", "(request or key)")
                raise ApiError(
                    400,
                    f"the run cannot fit its ceilings: {message}",
                    param="loomc",
                    code=first.code,
                ) from None
            plan = _Plan(run, *_reservation(bounded))
            while len(self._plans) >= PLAN_CACHE_SIZE:
                del self._plans[next(iter(self._plans))]  # least recently used
        self._plans[key] = plan  # most recently used last
        return plan

    async def release(self, admitted: Admitted) -> None:
        """Give back the reservation of an admitted run that never started."""
        if not admitted.started and admitted.reservation is not None:
            admitted.started = True
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.store.settle, admitted.reservation, Usage())

    async def execute(
        self, admitted: Admitted, on_delta: Callable[[str], None] | None = None
    ) -> tuple[RunResult, dict[str, Any]]:
        admitted.started = True
        request, client, compiled = admitted.request, admitted.client, admitted.compiled
        ceilings, reservation = admitted.ceilings, admitted.reservation
        memory = TraceRecorder()
        answer = AnswerStream(compiled.answer, on_delta or (lambda _text: None))
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
                pipeline=compiled,
                ceilings=ceilings,
                providers=self.pool,
                sinks=[memory, answer],
                profiler=self.profiler,
                stream=on_delta is not None,
                **options,
            )
        finally:
            with anyio.CancelScope(shield=True):
                if result is not None:
                    # the settlement and the stored run in one transaction, one thread hop
                    stored = self._stored(result, memory, client, request, started)
                    await self._store_call(
                        "settle_and_save", reservation, result.budget.used, stored
                    )
                    if self.telemetry is not None:
                        self.telemetry.export(stored)
                elif reservation is not None and not _sent(memory):
                    # stopped before any step started: nothing can have been spent
                    await anyio.to_thread.run_sync(self.store.settle, reservation, Usage())
        answer.rest(result.answer)
        self.metrics.run(result)
        ext: dict[str, Any] = {"run_id": _run_id(memory, result)}
        if ignored:
            ext["ignored"] = ignored
        if answer.diverged:
            ext["stream_diverged"] = True
        return result, ext

    async def _reserve(self, client: Client, plan: _Plan) -> str | None:
        scopes = self._scopes(client)
        if not scopes:
            return None
        amount, tokens_unbounded, cost_unknown = plan.amount, plan.tokens_open, plan.cost_open
        for dim, open_ended in (("tokens", tokens_unbounded), ("usd", cost_unknown)):
            if open_ended and any(
                getattr(s.limits, "cost" if dim == "usd" else dim) is not None for s in scopes
            ):
                raise ApiError(
                    400,
                    f"a daily {dim} budget applies but this run's {dim} have no "
                    "bound (a step without max_tokens or pricing)",
                    code="unbounded_run",
                )
        try:
            reserved: str = await self._store_call("reserve", scopes, amount, today())
        except BudgetExhausted as exc:
            who = "this key's" if exc.scope.startswith("key:") else "the server's"
            raise ApiError(
                402,
                f"{who} daily {exc.dimension} budget is exhausted: {exc.used} of "
                f"{exc.limit} used or reserved, and this run may need {exc.asked}",
                type="insufficient_quota",
                code="budget_exhausted",
            ) from None
        return reserved

    async def _store_call(self, method: str, *args: Any) -> Any:
        """A store call on the event loop when it cannot block (an uncontended SQLite file),
        else in a worker thread: each hop to a thread costs a context switch per request."""
        now = getattr(self.store, "try_now", None)
        if now is not None:
            done, value = now(method, *args)
            if done:
                return value
        return await anyio.to_thread.run_sync(getattr(self.store, method), *args)

    @staticmethod
    def _stored(
        result: RunResult,
        memory: TraceRecorder,
        client: Client,
        request: ChatRequest,
        started: float,
    ) -> StoredRun:
        return stored_run(
            result,
            memory.events,
            source="serve",
            started=started,
            key=client.name,
            extra={"request": {"model": request.model, "user": request.user}},
        )


def _sent(memory: TraceRecorder) -> bool:
    return any(e.kind is EventKind.STEP_STARTED for e in memory.events)


def _run_id(memory: TraceRecorder, result: RunResult) -> str:
    return memory.events[0].run_id if memory.events else result.receipt_hash


def upstream_failed(result: RunResult) -> bool:
    return result.stop_reason is StopReason.ERROR and not result.answer
