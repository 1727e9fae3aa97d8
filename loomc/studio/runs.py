"""One Studio run: parse the form, pick the providers for its mode, run it, stream its events.

Modes:

- ``simulation`` animates the plan from the IR: each step of the compiled graph starts and
  finishes with the checker's worst case for it (guards assumed possibly true, as the checker
  assumes); no provider is called and nothing is stored;
- ``mock`` answers every model with the mock provider, whatever the policy configures;
- ``configured`` uses the policy's providers (the server's pool when there is one);
- ``byok`` (bring your own key) sends every model to one provider described in the form: type,
  base URL, a model map and a pasted key.

The pasted key is held in this request's memory only: it goes into an in-memory environment
mapping that the provider adapter reads (``env:`` reference, never a literal in any config), the
provider is closed when the run ends, and every error text is redacted before it leaves. The
stored run holds the events and the result, which never carry a key.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

import loomc
from loomc.api.running import default_tier
from loomc.diagnostics import DiagnosticError
from loomc.exec.events import Event, EventKind, MemorySink
from loomc.exec.result import RunResult
from loomc.ir.model import Pipeline
from loomc.policy.models import ProviderConfig
from loomc.project import Project
from loomc.providers.mapped import MappedProvider
from loomc.providers.registry import ProviderPool, build_provider
from loomc.risk.base import RiskProfiler, tier_for_level
from loomc.secrets import REDACTED, held_secret, redact
from loomc.store import Store, StoredRun
from loomc.studio.views import pipeline_view

MODES = ("simulation", "mock", "configured", "byok")
AUTO = "auto"
BYOK_TYPES = ("openai-compatible", "openrouter", "lmstudio", "dot", "ollama")
BYOK_VAR = "LOOMC_STUDIO_BYOK_KEY"  # the name in the run's in-memory environment only
MAX_PROMPT_CHARS = 100_000
SIMULATED_STEP_S = 0.35  # how long the simulation shows each step running

Write = Callable[[dict[str, Any]], Awaitable[None]]


class StudioError(Exception):
    """A form the Studio cannot run: answered as a 400 with this one-line message."""


@dataclass(frozen=True)
class Byok:
    type: str
    base_url: str
    models: dict[str, str]  # policy model ref (provider/model) or "*" -> the provider's model id
    key: str = field(repr=False)


@dataclass(frozen=True)
class RunForm:
    prompt: str
    pipeline: str
    tier: str | None  # None: the pipeline has no tiers; "auto": the risk profile picks
    mode: str
    byok: Byok | None = None


def _text(body: Mapping[str, Any], name: str, default: str | None = None) -> str:
    value = body.get(name, default)
    if not isinstance(value, str):
        raise StudioError(f"{name} must be a string")
    return value


def parse_form(body: Any) -> RunForm:
    """The run form as JSON; raises ``StudioError`` naming the first bad field."""
    if not isinstance(body, dict):
        raise StudioError("the request body must be a JSON object")
    prompt = _text(body, "prompt", "")
    if not prompt.strip():
        raise StudioError("the prompt is empty")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise StudioError(f"the prompt is over {MAX_PROMPT_CHARS} characters")
    mode = _text(body, "mode", "mock")
    if mode not in MODES:
        raise StudioError(f"unknown mode {mode!r} (modes: {', '.join(MODES)})")
    tier = body.get("tier")
    if tier is not None and not isinstance(tier, str):
        raise StudioError("tier must be a string")
    byok = None
    if mode == "byok":
        raw = body.get("byok")
        if not isinstance(raw, dict):
            raise StudioError("bring-your-own-key needs a provider (type, base URL, key)")
        kind = _text(raw, "type", "openai-compatible")
        if kind not in BYOK_TYPES:
            raise StudioError(f"unknown provider type {kind!r} (types: {', '.join(BYOK_TYPES)})")
        base_url = _text(raw, "base_url", "").strip()
        if not base_url.startswith(("http://", "https://")):
            raise StudioError("the base URL must start with http:// or https://")
        key = _text(raw, "key", "")
        if not key or any(c.isspace() for c in key):
            raise StudioError("the key is empty or holds whitespace")
        byok = Byok(kind, base_url, parse_model_map(_text(raw, "models", "")), key)
    return RunForm(prompt, _text(body, "pipeline", "general"), tier or None, mode, byok)


def parse_model_map(text: str) -> dict[str, str]:
    """Lines of ``policy-model = provider-model`` (``*`` maps every other model)."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        left, sep, right = line.partition("=")
        if not sep or not left.strip() or not right.strip():
            raise StudioError(f"model map line {number}: write policy-model = provider-model")
        out[left.strip()] = right.strip()
    if not out:
        raise StudioError("the model map is empty: map each model (or * for all)")
    return out


def auto_tier(profiler: RiskProfiler, prompt: str, kind: str, tiers: Sequence[str]) -> str:
    """``auto``: the rule of ``loomc serve``'s ``auto`` model (``tier_for_level``)."""
    return tier_for_level(profiler.profile(prompt, kind).level, tiers)


def byok_models(byok: Byok, pipeline: Pipeline) -> dict[str, str]:
    """Every model of the pipeline mapped; raises ``StudioError`` naming an unmapped one."""
    out: dict[str, str] = {}
    for step in pipeline.graph.steps():
        target = byok.models.get(step.model, byok.models.get("*"))
        if target is None:
            raise StudioError(f"the model map has no line for {step.model} (or *)")
        out[step.model] = target
    return out


class Runner:
    """Runs the Studio's forms against one project and stores what ran in ``store``."""

    def __init__(self, project: Project, store: Store, profiler: RiskProfiler) -> None:
        self.project, self.store, self.profiler = project, store, profiler

    def tiers(self, name: str) -> list[str]:
        compiled, _ = self.project.pipelines()
        return [p.tier for p in compiled if p.name == name and p.tier is not None]

    def prepare(self, form: RunForm) -> tuple[Pipeline, dict[str, Any] | None]:
        """The compiled pipeline x tier the form names (``auto`` resolved by the risk profile)
        and the auto decision; raises ``StudioError`` when it does not compile or check."""
        tier, decision = form.tier, None
        if tier == AUTO:
            tiers = self.tiers(form.pipeline)
            if not tiers:
                raise StudioError(f"pipeline {form.pipeline!r} has no tiers to choose from")
            kind = self._kind(form.pipeline)
            tier = auto_tier(self.profiler, form.prompt, kind, tiers)
            risk = self.profiler.profile(form.prompt, kind).to_json()
            decision = {"tier": tier, "tiers": tiers, "risk": risk}
        elif tier is None:
            tier = default_tier(self.project)  # a tier-less pipeline ignores it
        try:
            compiled = self.project.compile(form.pipeline, tier)
        except DiagnosticError as exc:
            first = exc.diagnostics[0]
            raise StudioError(f"{first.code} {first.message}") from None
        if form.byok is not None:
            byok_models(form.byok, compiled)
        return compiled, decision

    def _kind(self, name: str) -> str:
        compiled, _ = self.project.pipelines()
        return next((p.kind for p in compiled if p.name == name), "general")

    async def stream(
        self,
        form: RunForm,
        compiled: Pipeline,
        decision: dict[str, Any] | None,
        write: Write,
        shared: ProviderPool | None = None,
    ) -> None:
        """Write the run as events: ``plan`` (the graph with its worst cases), ``tier-chosen``
        for auto, the runtime's events, then ``receipt`` (or ``error``). ``shared`` is the
        server's pool, used by *configured* runs."""
        await write({"kind": "plan", "data": pipeline_view(self.project, compiled)})
        if decision is not None:
            await write({"kind": "tier-chosen", "data": decision})
        if form.mode == "simulation":
            await self._simulate(compiled, write)
            return
        key = form.byok.key if form.byok is not None else None
        # a pasted key is redacted from every text while the run lasts, then forgotten
        with held_secret(key) if key else contextlib.nullcontext():
            try:
                await self._execute(form, compiled, write, shared)
            except Exception as exc:  # one line to the page, keys removed; never a traceback
                while isinstance(exc, ExceptionGroup) and exc.exceptions:
                    exc = exc.exceptions[0]
                message = redact(str(exc) or type(exc).__name__)
                if key:
                    message = message.replace(key, REDACTED)
                await write({"kind": "error", "data": {"message": message}})

    async def _execute(
        self, form: RunForm, compiled: Pipeline, write: Write, shared: ProviderPool | None
    ) -> None:
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        memory = MemorySink()
        outcome: list[RunResult] = []

        class Forward:
            async def emit(self, event: Event) -> None:
                send.send_nowait(_event_json(event))

        async def produce() -> None:
            with send:
                async with self._providers(form, compiled, shared) as pool:
                    started = time.time()
                    result = await loomc.arun(
                        form.prompt,
                        project=self.project,
                        pipeline=compiled.name,
                        tier=compiled.tier,
                        providers=pool,
                        sinks=[memory, Forward()],
                        profiler=self.profiler,
                    )
                    outcome.append(result)
                with anyio.CancelScope(shield=True):
                    await self._save(result, memory, form.mode, started)

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            with receive:
                async for item in receive:
                    await write(item)
        result = outcome[0]
        body = result.model_dump(mode="json")
        body["run_id"] = memory.events[0].run_id if memory.events else result.receipt_hash
        body["mode"] = form.mode
        await write({"kind": "receipt", "data": body})

    def _providers(
        self, form: RunForm, compiled: Pipeline, shared: ProviderPool | None
    ) -> _PoolScope:
        policy = self.project.policy
        if form.mode == "configured":
            return _PoolScope(shared or ProviderPool(policy), owned=shared is None)
        pool = ProviderPool(policy)
        names = {s.provider for s in compiled.graph.steps()} | set(policy.providers)
        if form.mode == "mock":
            for name in names:
                cfg = policy.providers.get(name)
                script = cfg.mock if cfg is not None and cfg.type == "mock" else None
                pool.put(name, build_provider(name, ProviderConfig(type="mock", mock=script)))
        else:
            assert form.byok is not None
            byok = form.byok
            cfg = ProviderConfig.model_validate(
                {"type": byok.type, "base_url": byok.base_url, "api_key": f"env:{BYOK_VAR}"}
            )
            upstream = build_provider("byok", cfg, {BYOK_VAR: byok.key})
            models = byok_models(byok, compiled)
            for name in names:
                pool.put(name, MappedProvider(name, upstream, models))
        return _PoolScope(pool, owned=True)

    async def _save(self, result: RunResult, memory: MemorySink, mode: str, started: float) -> None:
        events = [e.to_json() for e in memory.events if e.kind is not EventKind.TOKEN]
        body = result.model_dump(mode="json")
        body["request"] = {"studio_mode": mode}
        stored = StoredRun(
            run_id=memory.events[0].run_id if memory.events else result.receipt_hash,
            ts=started,
            pipeline=result.pipeline,
            tier=result.tier,
            key=None,
            source="studio",
            stop_reason=str(result.stop_reason),
            calls=result.calls,
            tokens=result.tokens,
            credits=None if result.credits is None else str(result.credits),
            cost=None if result.cost is None else str(result.cost),
            elapsed_ms=result.elapsed_ms,
            receipt_hash=result.receipt_hash,
            result=body,
            events=events,
        )
        await anyio.to_thread.run_sync(self.store.save_run, stored)

    async def _simulate(self, compiled: Pipeline, write: Write) -> None:
        """The plan animated from the IR: each step with the checker's worst case for it."""
        view = pipeline_view(self.project, compiled)
        run_id = "simulation"
        now = time.time
        await write(
            {
                "kind": str(EventKind.RUN_STARTED),
                "run_id": run_id,
                "step": None,
                "ts": now(),
                "data": {"pipeline": compiled.name, "tier": compiled.tier, "simulated": True},
            }
        )
        for step in view["steps"]:
            sid, worst = step["id"], step["worst"] or {}
            base = {"run_id": run_id, "step": sid}
            await write(
                {
                    **base,
                    "kind": str(EventKind.STEP_STARTED),
                    "ts": now(),
                    "data": {"role": step["role"], "model": step["model"], "simulated": True},
                }
            )
            await anyio.sleep(SIMULATED_STEP_S)
            await write(
                {
                    **base,
                    "kind": str(EventKind.STEP_FINISHED),
                    "ts": now(),
                    "data": {
                        "status": "simulated",
                        "simulated": True,
                        "guard": step["guard_text"],
                        "worst": worst,
                        "usage": {"total_tokens": worst.get("tokens")},
                        "calls": worst.get("calls"),
                    },
                }
            )
        await write(
            {
                "kind": "receipt",
                "data": {
                    "simulated": True,
                    "mode": "simulation",
                    "pipeline": compiled.name,
                    "tier": compiled.tier,
                    "worst": view["worst"],
                    "ceilings": view["ceilings"],
                },
            }
        )


def _event_json(event: Event) -> dict[str, Any]:
    """An event for the page: the runtime's JSON (model text stays a JSON string)."""
    data = event.to_json()
    if event.kind is EventKind.PROVIDER_FRAME:
        data["data"] = {}  # raw wire frames are for traces, not the page
    return data


class _PoolScope:
    """A pool the run closes when it owns it (mock, BYOK, or configured without a server)."""

    def __init__(self, pool: ProviderPool, owned: bool) -> None:
        self.pool, self.owned = pool, owned

    async def __aenter__(self) -> ProviderPool:
        return self.pool

    async def __aexit__(self, *exc: object) -> None:
        if self.owned:
            with anyio.CancelScope(shield=True):
                await self.pool.aclose()
