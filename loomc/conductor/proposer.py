"""The learned planner's proposer: a v2 prompt in, the model's raw text out.

Split from `loomc.conductor.planners` (the registry and the deterministic `risk` planner) because
it owns a model's whole life cycle: in-process or served, pinned, batched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from loomc.conductor.errors import PlannerError, PlannerUnavailable
from loomc.conductor.plan import Constraints, Plan, PlanParseError, TaskProfile, WorkerProfile
from loomc.conductor.prompt_format import build_prompt, extract_first_json
from loomc.conductor.served import Served, ServedPlanner
from loomc.ir.model import Pricing

if TYPE_CHECKING:
    from loomc.exec.ledger import Ledger, LedgerHook

Item = tuple[TaskProfile, Sequence[WorkerProfile], Constraints]

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
        merge_adapter: bool | None = None,
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
                "merge_adapter": merge_adapter,
            }.items()
            if v is not None
        }
        self.batch_size = batch_size
        self.alias_workers = alias_workers
        self._model = model
        self.last_prompt: str | None = None
        self.last_raw: str | None = None
        # per prompt of the latest call: what a served model's calls cost (None in process:
        # nothing is billed), even when the call failed; the guard puts it on the decision
        self.last_usage: list[dict[str, Any] | None] = []
        # a served model's price, set by a caller that knows the policy (`loomc.conductor.cost`)
        self.pricing: Pricing | None = None
        self.credits = Decimal(0)

    @property
    def served(self) -> bool:
        """Whether the model is an endpoint (its calls are billed, metered and budgeted)."""
        if self._model is not None:
            return isinstance(self._model, ServedPlanner)
        return bool(self.endpoint)

    def check(self) -> None:
        """What can be verified without a request or loading weights: the endpoint's URL, key
        reference and model name, or the base model's directory; and the adapter's pin.
        Raises `PlannerUnavailable`."""
        if self._model is not None:
            return
        if self.endpoint:
            self._model = self._served()
            return
        self._verify_pin()
        if not self.base_model:
            raise PlannerUnavailable(
                "the learned planner needs a base model (--base-model DIR) or an endpoint"
            )

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
        from loomc.conductor.served import ServedPlannerError

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
                pricing=self.pricing,
                credits=self.credits,
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

        self.last_usage = [None] * len(prompts)
        model = self.model()
        try:
            outputs = model.generate(prompts, batch_size=self.batch_size)
        except ServedPlannerError as exc:
            raise PlannerUnavailable(f"the learned planner is unavailable: {exc}") from exc
        finally:
            used = getattr(model, "last_usage", None)
            if isinstance(used, list) and len(used) == len(prompts):
                self.last_usage = list(used)
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

    def prompts(self, items: Sequence[Item]) -> list[str]:
        """The prompts `propose_batch` sends for ``items`` (the pre-flight sizes them)."""
        return [build_prompt(task, c, self._view(workers)[0]) for task, workers, c in items]

    async def apropose_batch(
        self,
        items: Sequence[Item],
        *,
        ledger: Ledger | None = None,
        hooks: Sequence[LedgerHook | None] | None = None,
        on_each: Callable[[int, Served], None] | None = None,
    ) -> list[Served]:
        """`propose_batch` without raising on a failed call: each item's outcome, in order
        (`Served`: the mapped-back text, or the error, or the caller's ledger's refusal). A
        served model reserves each call under ``ledger``; an in-process model runs in a worker
        thread and an error fails every item. ``on_each`` hears each item when it is done."""
        views = [self._view(workers) for _, workers, _ in items]
        prompts = [
            build_prompt(task, constraints, shown)
            for (task, _, constraints), (shown, _) in zip(items, views, strict=True)
        ]

        def mapped(i: int, outcome: Served) -> Served:
            if outcome.text is None:
                return outcome
            return Served(self._map_back(outcome.text, views[i][1]), outcome.usage)

        if self.served:
            model = self.model()
            assert isinstance(model, ServedPlanner)
            report = None if on_each is None else (lambda i, o: on_each(i, mapped(i, o)))
            outcomes = await model.agenerate(
                prompts, self.batch_size, ledger=ledger, hooks=hooks, on_each=report
            )
            return [mapped(i, o) for i, o in enumerate(outcomes)]
        import anyio.to_thread

        try:
            texts = await anyio.to_thread.run_sync(self._generate, prompts)
            done = [Served(self._map_back(t, v[1]), {}) for t, v in zip(texts, views, strict=True)]
            # in process: the model loads (and runs) off the event loop, nothing is billed
        except PlannerError as exc:
            why = str(exc).removeprefix("the learned planner is unavailable: ")
            done = [Served(None, {}, error=why) for _ in prompts]
        for i, outcome in enumerate(done):
            if on_each is not None:
                on_each(i, outcome)
        return done

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
