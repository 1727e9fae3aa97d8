"""The planners: (task profile, worker profiles, hard constraints) → a proposed `Plan`.

* `risk` (`RiskPlanner`) — the deterministic local default, mirroring the adaptive tiers: the
  risk level (read back from `task.risk` with the thresholds of `loomc.conductor.mapping`) picks
  lean / balanced / strict (research tasks get at least balanced, like the reference's balanced
  escalation), clipped to the call ceiling; workers are picked per role by capability, then
  credits, then latency, like the reference `pick(prefs)` (CONDUCTOR-V2 §7.3) but with distinct
  workers, as the plan schema requires. When the preferred plan does not fit the limits it tries
  the other assignments of that depth, then shallower depths; an optional `admissible` predicate
  (the guard passes its own checker) lets it return only plans the checker accepts.
* `search` (`loomc.conductor.search.SearchPlanner`) — exhaustive under the v2 outcome model.
* `learned` (`LearnedProposer`) — the v2 prompt (`build_prompt`) fed to a causal LM + adapter
  (`loomc.conductor.learned.LearnedPlanner`, imported lazily); it returns the model's raw text,
  which only the guard turns into a plan.

Every planner's output is a proposal: `loomc.conductor.guard` decides whether it runs.
`make_planner` is the one registry: `loomc run --planner` and `loomc conductor predict` both use
it (the research `router` baseline is `loomc_research.v2.router`, outside the product).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from itertools import permutations
from typing import Any, Protocol, runtime_checkable

from loomc.conductor import PLANNER_NAMES
from loomc.conductor.outcome import Candidate, build_candidate, feasible, outcome
from loomc.conductor.plan import (
    Constraints,
    Plan,
    PlanParseError,
    Policy,
    TaskProfile,
    WorkerProfile,
)
from loomc.conductor.prompt_format import build_prompt, extract_first_json
from loomc.conductor.search import SearchPlanner, label_record
from loomc.errors import LoomcError

__all__ = [
    "PLANNER_NAMES",
    "LearnedProposer",
    "PlannerError",
    "PlannerUnavailable",
    "RiskPlanner",
    "make_planner",
]

DEPTH: tuple[Policy, ...] = ("lean", "balanced", "strict")
LEVEL_POLICY: dict[str, Policy] = {"low": "lean", "medium": "balanced", "high": "strict"}
HIGH_RISK = 0.7  # estimate.LEVEL_RISK: low 0.2, medium 0.5, high 0.85
MEDIUM_RISK = 0.4
RISK_REASON = "local_risk_policy"

WRITE = frozenset({"drafting", "writing", "coding", "implementation", "analysis"})
REVIEW = frozenset({"verification", "review", "critique", "audit"})
FINAL = frozenset({"synthesis", "final-answer", "writing"})
# pick(prefs) of §7.3 by capability: general tasks draft with the finalizer-like worker.
ROLE_PREFS: dict[str, tuple[frozenset[str], ...]] = {
    "writer_general": (FINAL, WRITE, REVIEW),
    "writer": (WRITE, FINAL, REVIEW),
    "reviewer": (REVIEW, FINAL, WRITE),
    "finalizer": (FINAL, WRITE, REVIEW),
}

Admissible = Callable[[Plan], bool]


class PlannerError(LoomcError, RuntimeError):
    """A planner could not propose anything (no feasible plan, model unavailable, ...)."""


class PlannerUnavailable(PlannerError):
    """The planner cannot run at all — a configuration problem, not a bad proposal: model or
    adapter missing, the adapter's pinned base model does not match, the endpoint is down.
    `loomc run` / `loomc eval` exit non-zero on it unless a fallback is explicitly allowed."""


@runtime_checkable
class TextPlanner(Protocol):
    """A planner whose proposal is raw text (a model's output), parsed only by the guard."""

    def propose(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> str: ...


def risk_level(task: TaskProfile) -> str:
    if task.risk >= HIGH_RISK:
        return "high"
    if task.risk >= MEDIUM_RISK:
        return "medium"
    return "low"


def preferred_policy(task: TaskProfile, constraints: Constraints, workers: int) -> Policy:
    """Risk level → tier, research at least balanced, within the call ceiling and the roster."""
    depth = DEPTH.index(LEVEL_POLICY[risk_level(task)])
    if task.category == "research":
        depth = max(depth, 1)
    depth = min(depth, max(constraints.max_calls, 1) - 1, max(workers, 1) - 1)
    return DEPTH[depth]


def _role_score(worker: WorkerProfile, prefs: tuple[frozenset[str], ...]) -> int:
    strengths = set(worker.strengths)
    return next((i for i, caps in enumerate(prefs) if caps & strengths), len(prefs))


def _label(
    task: TaskProfile,
    constraints: Constraints,
    candidate: Candidate,
    table: Mapping[str, WorkerProfile],
    codes: Sequence[str],
) -> dict[str, Any]:
    return label_record(
        constraints, candidate, outcome(task, candidate, table), sorted(set(codes))[:4]
    )


class RiskPlanner:
    """The deterministic default; see the module docstring."""

    name = "risk"

    def _assignments(
        self, policy: Policy, task: TaskProfile, workers: Sequence[WorkerProfile]
    ) -> list[Candidate]:
        """Every distinct assignment of this depth, best first (the §7.3 pick is first)."""
        table = {w.id: w for w in workers}
        order = {w.id: i for i, w in enumerate(workers)}
        writer_prefs = ROLE_PREFS["writer_general" if task.category == "general" else "writer"]
        n = {"lean": 1, "balanced": 2, "strict": 3}[policy]

        def key(roles: tuple[str, ...]) -> tuple[int, int, int, float, int, list[int]]:
            prefs = [writer_prefs, ROLE_PREFS["reviewer"], ROLE_PREFS["finalizer"]]
            # Scarce roles first: the finalizer, then the reviewer, then the writer.
            scores = [_role_score(table[w], p) for w, p in zip(roles, prefs, strict=False)]
            dependent = 0
            if len(roles) > 1 and table[roles[0]].provider_group == table[roles[1]].provider_group:
                dependent = 1
            credits = sum(table[w].credits_per_call for w in roles)
            latency = sum(table[w].p95_latency_ms for w in roles)
            return (
                sum(scores[1:]),
                scores[0],
                dependent,
                credits,
                latency,
                [order[w] for w in reversed(roles)],
            )

        combos = sorted(permutations([w.id for w in workers], n), key=key)
        return [
            build_candidate(
                policy,
                roles[0],
                roles[1] if n > 1 else None,
                roles[2] if n > 2 else None,
                table,
            )
            for roles in combos
        ]

    def plan(
        self,
        task: TaskProfile,
        workers: Sequence[WorkerProfile],
        constraints: Constraints,
        *,
        admissible: Admissible | None = None,
    ) -> Plan:
        if not workers:
            raise PlannerError("no workers to plan with")
        table = {w.id: w for w in workers}
        level = risk_level(task)
        preferred = preferred_policy(task, constraints, len(workers))
        wanted = LEVEL_POLICY[level]
        for depth in range(DEPTH.index(preferred), -1, -1):
            policy = DEPTH[depth]
            for candidate in self._assignments(policy, task, workers):
                if not feasible(candidate, constraints):
                    continue
                codes = [RISK_REASON, f"risk_{level}"]
                if depth > DEPTH.index(wanted):
                    codes.append("research_task")
                elif depth < DEPTH.index(wanted):
                    codes.append(
                        "call_ceiling" if depth == DEPTH.index(preferred) else "budget_constrained"
                    )
                plan = Plan.from_json(_label(task, constraints, candidate, table, codes))
                if admissible is None or admissible(plan):
                    return plan
        raise PlannerError("no plan of any depth fits the call, credit and latency limits")


_ALIAS = re.compile(r'"(worker_[a-z]+)"')


def _aliases(n: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [
        f"worker_{letters[i]}" if i < 26 else f"worker_{letters[i // 26 - 1]}{letters[i % 26]}"
        for i in range(n)
    ]


class LearnedProposer:
    """The learned planner: a v2 prompt in, the model's raw text out (worker ids mapped back).

    The model is in-process (`base_model` + `adapter`: `loomc.conductor.learned`) or served
    (`endpoint` + `endpoint_model`: `loomc.conductor.served`, through the provider layer). An
    adapter is loaded only after its pin is verified (`base_model_id` must be the adapter's
    declared base, `revision` the base directory's commit or weights digest:
    `loomc.conductor.pin`). Anything that stops the model from running raises
    `PlannerUnavailable`, one line.

    With `alias_workers` (default) the prompt names the workers `worker_a, worker_b, ...` and
    their groups `provider_x, provider_y, ...` in roster order — the ids and groups the model was
    trained on — and every quoted alias in the output is mapped back to the policy's worker id;
    an alias that names no worker stays as it is and the guard rejects it (`unknown_worker`).
    `model` may be any object with `.generate(prompts, batch_size) -> list[str]`; by default it
    is `loomc.conductor.learned.LearnedPlanner`, built on first use.
    """

    name = "learned"

    def __init__(
        self,
        base_model: str | None = None,
        adapter: str | None = None,
        *,
        revision: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_new_tokens: int | None = None,
        batch_size: int = 8,
        alias_workers: bool = True,
        model: Any = None,
        base_model_id: str | None = None,
        endpoint: str | None = None,
        endpoint_model: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.base_model = base_model
        self.adapter = adapter
        self.base_model_id = base_model_id
        self.endpoint = endpoint
        self.endpoint_model = endpoint_model
        self.api_key = api_key
        self.options: dict[str, Any] = {
            k: v
            for k, v in {
                "revision": revision,
                "device": device,
                "dtype": dtype,
                "max_new_tokens": max_new_tokens,
            }.items()
            if v is not None
        }
        self.batch_size = batch_size
        self.alias_workers = alias_workers
        self._model = model
        self.last_prompt: str | None = None
        self.last_raw: str | None = None

    def model(self) -> Any:
        if self._model is None and self.endpoint:
            self._model = self._served()
        if self._model is None:
            self._verify_pin()
            if not self.base_model:
                raise PlannerUnavailable(
                    "the learned planner needs a base model (--base-model DIR) or an endpoint"
                )
            try:
                from loomc.conductor.learned import (  # type: ignore[import-not-found,import-untyped,unused-ignore]
                    LearnedPlanner,
                )

                options: dict[str, Any] = dict(self.options)
                self._model = LearnedPlanner(self.base_model, self.adapter, **options)
            except (ImportError, RuntimeError, OSError, ValueError) as exc:
                raise PlannerUnavailable(f"the learned planner is unavailable: {exc}") from exc
        return self._model

    def _served(self) -> Any:
        from loomc.conductor.served import ServedPlanner, ServedPlannerError

        assert self.endpoint is not None
        if not self.endpoint_model:
            raise PlannerUnavailable("a served learned planner needs the served model's name")
        self._verify_pin()
        try:
            return ServedPlanner(
                self.endpoint,
                self.endpoint_model,
                api_key=self.api_key,
                max_new_tokens=int(self.options.get("max_new_tokens", 512)),
            )
        except ServedPlannerError as exc:
            raise PlannerUnavailable(f"the learned planner is unavailable: {exc}") from exc

    def _verify_pin(self) -> None:
        """The adapter's declared base against our pin, before anything loads."""
        from pathlib import Path

        from loomc.conductor.pin import PinMismatch, verify_pin

        base = Path(self.base_model) if self.base_model and not self.endpoint else None
        adapter = Path(self.adapter) if self.adapter else None
        try:
            if adapter is not None and not adapter.is_dir():
                raise PinMismatch(f"adapter directory not found: {adapter}")
            if base is not None and not base.is_dir():
                raise PinMismatch(f"base model directory not found: {base}")
            verify_pin(adapter, base, self.base_model_id, self.options.get("revision"))
        except PinMismatch as exc:
            raise PlannerUnavailable(f"the learned planner is unavailable: {exc}") from exc

    def _generate(self, prompts: list[str]) -> list[str]:
        from loomc.conductor.served import ServedPlannerError

        model = self.model()
        try:
            outputs = model.generate(prompts, batch_size=self.batch_size)
        except ServedPlannerError as exc:
            raise PlannerUnavailable(f"the learned planner is unavailable: {exc}") from exc
        if len(outputs) != len(prompts):
            raise PlannerError("the learned planner returned no output")
        return [str(o) for o in outputs]

    def propose_batch(
        self, items: Sequence[tuple[TaskProfile, Sequence[WorkerProfile], Constraints]]
    ) -> list[str]:
        """`propose` for many tasks in one batched call (in order)."""
        views = [self._view(workers) for _, workers, _ in items]
        prompts = [
            build_prompt(task, constraints, shown)
            for (task, _, constraints), (shown, _) in zip(items, views, strict=True)
        ]
        raws = self._generate(prompts)
        return [self._map_back(raw, back) for raw, (_, back) in zip(raws, views, strict=True)]

    def _map_back(self, raw: str, back: Mapping[str, str]) -> str:
        if not back:
            return raw
        return _ALIAS.sub(lambda m: f'"{back.get(m.group(1), m.group(1))}"', raw)

    def _view(self, workers: Sequence[WorkerProfile]) -> tuple[list[WorkerProfile], dict[str, str]]:
        if not self.alias_workers:
            return list(workers), {}
        ids = _aliases(len(workers))
        groups: dict[str, str] = {}
        for w in workers:
            groups.setdefault(
                w.provider_group,
                f"provider_{'xyzuvw'[len(groups) % 6]}"
                + ("" if len(groups) < 6 else str(len(groups))),
            )
        shown = [
            WorkerProfile(
                id=alias,
                provider_group=groups[w.provider_group],
                quality=w.quality,
                pass_rate=w.pass_rate,
                credits_per_call=w.credits_per_call,
                p95_latency_ms=w.p95_latency_ms,
                strengths=w.strengths,
            )
            for alias, w in zip(ids, workers, strict=True)
        ]
        return shown, {alias: w.id for alias, w in zip(ids, workers, strict=True)}

    def prompt(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> str:
        shown, _ = self._view(workers)
        return build_prompt(task, constraints, shown)

    def propose(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> str:
        shown, back = self._view(workers)
        prompt = build_prompt(task, constraints, shown)
        self.last_prompt = prompt
        raw = self._generate([prompt])[0]
        self.last_raw = raw
        return self._map_back(raw, back)

    def plan(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> Plan:
        """Parse the raw proposal (first JSON object) — unchecked: use the guard to run it."""
        data = extract_first_json(self.propose(task, workers, constraints))
        if data is None:
            raise PlanParseError("invalid_json", "no JSON object in the model output")
        return Plan.from_json(data, worker_ids=[w.id for w in workers])


def make_planner(name: str, **options: Any) -> Any:
    """`risk`, `search` or `learned` (options are `LearnedProposer`'s)."""
    if name == "risk":
        return RiskPlanner()
    if name == "search":
        return SearchPlanner()
    if name == "learned":
        return LearnedProposer(**options)
    raise ValueError(f"unknown planner {name!r}; planners are {', '.join(PLANNER_NAMES)}")
