"""Admission: what a request may spend, proved and reserved before anything is sent.

A request's ceilings are its ``loomc`` object tightened by its key's per-run ceilings. The
pipeline x tier is compiled and checked under them once per (pipeline, tier, ceilings) — a
bounded LRU, since clients choose the ceilings — and the checker's worst case, capped by the
run's ceilings, is what the run reserves in the store's ledger against the key's and the
server's daily budgets. A refusal (400: cannot fit; 402: budget exhausted) happens here, before
a stream starts or a model is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from loomc.checker.worstcase import worst_case
from loomc.diagnostics import DiagnosticError
from loomc.ir.model import Pipeline
from loomc.policy.models import ServeSettings
from loomc.project import Project
from loomc.serve.auth import Client
from loomc.serve.leases import Budgets, Ticket
from loomc.serve.wire import ApiError, ChatRequest
from loomc.store import BudgetExhausted, Scope, today
from loomc.units import Budget, Usage

PLAN_CACHE_SIZE = 64


@dataclass(frozen=True, slots=True)
class Plan:
    run: Pipeline  # checked as `loomc check` proves it; the request's ceilings are its limits
    amount: Usage  # the worst case under the request's ceilings: what is reserved
    tokens_open: bool
    cost_open: bool


def ceilings(request: ChatRequest, client: Client) -> Budget:
    opts = request.loomc
    asked = Budget(
        calls=opts.max_calls,
        tokens=opts.max_tokens,
        credits=opts.max_credits,
        cost=opts.max_cost,
        latency_ms=opts.max_latency_ms,
    )
    return asked if client.key is None else asked.tighten(client.key.per_run.budget())


def reservation(pipeline: Pipeline) -> tuple[Usage, bool, bool]:
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


class Admission:
    def __init__(self, project: Project, settings: ServeSettings, budgets: Budgets) -> None:
        self.project, self.settings, self.budgets = project, settings, budgets
        self._plans: dict[tuple[str, str | None, Budget], Plan] = {}
        self._scope_cache: dict[str | None, list[Scope]] = {}

    def plan(self, name: str, tier: str | None, limits: Budget) -> Plan:
        """The pipeline x tier proved under the request's ceilings, the checked pipeline to run
        and its worst-case reservation (cached, least recently used out)."""
        key = (name, tier, limits)
        plan = self._plans.pop(key, None)
        if plan is None:
            try:
                bounded = self.project.compile(name, tier, limits)
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
            plan = Plan(run, *reservation(bounded))
            while len(self._plans) >= PLAN_CACHE_SIZE:
                del self._plans[next(iter(self._plans))]  # least recently used
        self._plans[key] = plan  # most recently used last
        return plan

    def scopes(self, client: Client) -> list[Scope]:
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

    async def reserve(self, client: Client, plan: Plan) -> Ticket | None:
        """The run's worst case reserved in every daily budget that applies (None: none does),
        on a lease or exactly (``leases.py``)."""
        scopes = self.scopes(client)
        if not scopes:
            return None
        for dim, open_ended in (("tokens", plan.tokens_open), ("usd", plan.cost_open)):
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
            return await self.budgets.reserve(scopes, plan.amount, today())
        except BudgetExhausted as exc:
            who = "this key's" if exc.scope.startswith("key:") else "the server's"
            raise ApiError(
                402,
                f"{who} daily {exc.dimension} budget is exhausted: {exc.used} of "
                f"{exc.limit} used or reserved, and this run may need {exc.asked}",
                type="insufficient_quota",
                code="budget_exhausted",
            ) from None
