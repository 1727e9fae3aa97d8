"""The policy of a project: providers, workers, tiers, pricing, risk, defaults, serve keys.

A policy is the part of a project that changes with the deployment (which gateway, which models,
what they cost) while `.loom` pipelines describe the shape of the work. Amounts are exact
decimals and durations are normalised to milliseconds at validation time so that every later
stage sees one unit per dimension.

These are plain frozen records (:mod:`loomc.policy.record`) checked by hand, so that loading a
policy costs no pydantic import or schema build; whatever the checks are unsure of, errors
included, is validated by the pydantic twins in :mod:`loomc.policy.pydantic_models`, which stay
the reference: same fields, same defaults, same messages. Change a field in both.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar, Literal

from loomc.policy.record import (
    REQUIRED,
    Factory,
    Fields,
    Record,
    Unsure,
    anything,
    boolean,
    dict_of,
    list_of,
    one_of,
    optional,
    record,
    string,
    where,
)
from loomc.policy.values import (
    _NAME,
    ENV_REF,
    MAX_AMOUNT,
    ProviderType,
    _compiles,
    _decimal,
    _duration,
    _has_provider,
    amount,
    duration,
    integer,
    number,
)
from loomc.units import Budget

__all__ = [  # ENV_REF, MAX_AMOUNT, ProviderType, _duration, _decimal: read here by other modules
    "ENV_REF",
    "MAX_AMOUNT",
    "REQUIRED",
    "Defaults",
    "Factory",
    "MockFault",
    "MockRule",
    "MockScript",
    "PeriodBudget",
    "Policy",
    "Price",
    "ProviderConfig",
    "ProviderType",
    "RiskSettings",
    "ServeKey",
    "ServeSettings",
    "TierConfig",
    "WorkerConfig",
    "_decimal",
    "_duration",
]

# --- mock provider script ----------------------------------------------------------------------


class MockFault(Record):
    """A fault the mock injects: HTTP status, timeout, or a stream cut after some tokens."""

    kind: Literal["status", "timeout", "stream-cut", "malformed"]
    status: int
    retry_after_s: float | None
    after_tokens: int
    times: int
    fields: ClassVar[Fields] = {
        "kind": (one_of("status", "timeout", "stream-cut", "malformed"), REQUIRED),
        "status": (integer(), 500),
        "retry_after_s": (optional(number()), None),
        "after_tokens": (integer(), 3),
        "times": (integer(ge=1), 1),
    }


class MockRule(Record):
    """First matching rule wins; unset matchers match anything."""

    role: str | None
    model: str | None
    pattern: str | None
    response: str | None
    latency_ms: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    spent_credits: Decimal | None
    fault: MockFault | None
    fields: ClassVar[Fields] = {
        "role": (optional(string), None),
        "model": (optional(string), None),
        "pattern": (optional(where(string, _compiles)), None),
        "response": (optional(string), None),
        "latency_ms": (optional(duration), None),
        "prompt_tokens": (optional(integer()), None),
        "completion_tokens": (optional(integer()), None),
        "spent_credits": (optional(amount), None),
        "fault": (optional(record(MockFault)), None),
    }


class MockScript(Record):
    latency_ms: int
    stream_chunk_words: int
    report_usage: bool
    rules: list[MockRule]
    default_response: str | None
    fields: ClassVar[Fields] = {
        "latency_ms": (duration, 0),
        "stream_chunk_words": (integer(ge=1), 1),
        "report_usage": (boolean, True),
        "rules": (list_of(record(MockRule)), Factory(list)),
        "default_response": (optional(string), None),
    }


# --- providers, workers, pricing -------------------------------------------------------------


class ProviderConfig(Record):
    type: ProviderType
    base_url: str | None
    api_key: str | None
    headers: dict[str, str]
    timeout: int | None
    mock: MockScript | None
    extra_body: dict[str, Any]
    max_response_bytes: int | None
    fields: ClassVar[Fields] = {
        "type": (
            one_of("mock", "openai-compatible", "openrouter", "lmstudio", "dot", "ollama"),
            REQUIRED,
        ),
        "base_url": (optional(string), None),
        "api_key": (optional(string), None),
        "headers": (dict_of(string), Factory(dict)),
        "timeout": (optional(duration), None),
        "mock": (optional(record(MockScript)), None),
        "extra_body": (dict_of(anything), Factory(dict)),
        "max_response_bytes": (optional(integer(ge=1024)), None),
    }


class WorkerConfig(Record):
    model: str
    label: str | None
    group: str | None
    capabilities: list[str]
    credits: Decimal
    p95_latency: int | None
    max_tokens: int | None
    timeout: int | None
    retries: int | None
    temperature: float | None
    fields: ClassVar[Fields] = {
        "model": (where(string, _has_provider), REQUIRED),
        "label": (optional(string), None),
        "group": (optional(string), None),
        "capabilities": (list_of(string), Factory(list)),
        "credits": (amount, Decimal(0)),
        "p95_latency": (optional(duration), None),
        "max_tokens": (optional(integer(ge=1)), None),
        "timeout": (optional(duration), None),
        "retries": (optional(integer(ge=0)), None),
        "temperature": (optional(number(ge=0, le=2)), None),
    }

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0]

    @property
    def model_id(self) -> str:
        return self.model.split("/", 1)[1]

    @property
    def provider_group(self) -> str:
        return self.group or self.provider


class Price(Record):
    input_per_million: Decimal
    output_per_million: Decimal
    fields: ClassVar[Fields] = {
        "input_per_million": (amount, REQUIRED),
        "output_per_million": (amount, REQUIRED),
    }


class TierConfig(Record):
    calls: int | None
    tokens: int | None
    credits: Decimal | None
    cost: Decimal | None
    latency: int | None
    fields: ClassVar[Fields] = {
        "calls": (optional(integer(ge=0)), None),
        "tokens": (optional(integer(ge=0)), None),
        "credits": (optional(amount), None),
        "cost": (optional(amount), None),
        "latency": (optional(duration), None),
    }

    def budget(self) -> Budget:
        return Budget(
            calls=self.calls,
            tokens=self.tokens,
            credits=self.credits,
            cost=self.cost,
            latency_ms=self.latency,
        )


def _default_tiers() -> dict[str, TierConfig]:
    return {
        "lean": TierConfig(calls=1, latency=45_000),
        "balanced": TierConfig(calls=2, latency=60_000),
        "strict": TierConfig(calls=3, latency=120_000),
    }


class RiskSettings(Record):
    """Which profiler decides escalation, and the signals the keyword profiler looks for."""

    # auto: semantic when its extra is installed, else keywords (loomc/risk/factory.py)
    profiler: Literal["auto", "keywords", "semantic", "reference"]
    signals: dict[str, list[str]]
    research_terms: list[str]
    escalate_terms: list[str]
    long_prompt_chars: int
    high_threshold: float
    medium_threshold: float
    options: dict[str, Any]
    fields: ClassVar[Fields] = {
        "profiler": (one_of("auto", "keywords", "semantic", "reference"), "auto"),
        "signals": (dict_of(list_of(string)), Factory(dict)),
        "research_terms": (list_of(string), Factory(list)),
        "escalate_terms": (list_of(string), Factory(list)),
        "long_prompt_chars": (integer(), 180),
        "high_threshold": (number(ge=0, le=1), 0.5),
        "medium_threshold": (number(ge=0, le=1), 0.3),
        "options": (dict_of(anything), Factory(dict)),
    }


class Defaults(Record):
    max_tokens: int | None
    timeout: int
    retries: int
    input_tokens: int
    credits_per_call: Decimal
    backoff_base: int
    backoff_max: int
    fields: ClassVar[Fields] = {
        "max_tokens": (optional(integer(ge=1)), None),
        "timeout": (duration, 30_000),
        "retries": (integer(ge=0), 0),
        "input_tokens": (integer(ge=1), 4000),
        "credits_per_call": (amount, Decimal(0)),
        "backoff_base": (duration, 250),
        "backoff_max": (duration, 4000),
    }


# --- serve: who may call `loomc serve`, and how much ---------------------------------------------


class PeriodBudget(Record):
    """A ceiling per period (a UTC day) on everything a key, or the whole server, may spend."""

    calls: int | None
    tokens: int | None
    credits: Decimal | None
    usd: Decimal | None
    fields: ClassVar[Fields] = {
        "calls": (optional(integer(ge=0)), None),
        "tokens": (optional(integer(ge=0)), None),
        "credits": (optional(amount), None),
        "usd": (optional(amount), None),
    }

    def budget(self) -> Budget:
        return Budget(calls=self.calls, tokens=self.tokens, credits=self.credits, cost=self.usd)


class ServeKey(Record):
    """A bearer key clients send; the secret itself lives in the environment, never here."""

    name: str
    key: str
    per_run: TierConfig
    per_day: PeriodBudget
    fields: ClassVar[Fields] = {
        "name": (where(string, lambda v: _NAME.fullmatch(v) is not None), REQUIRED),
        "key": (where(string, lambda v: ENV_REF.match(v) is not None), REQUIRED),
        "per_run": (record(TierConfig), Factory(lambda: TierConfig.build({}))),
        "per_day": (record(PeriodBudget), Factory(lambda: PeriodBudget.build({}))),
    }


class ServeSettings(Record):
    keys: list[ServeKey]
    per_day: PeriodBudget
    max_body_bytes: int
    fields: ClassVar[Fields] = {
        "keys": (list_of(record(ServeKey)), Factory(list)),
        "per_day": (record(PeriodBudget), Factory(lambda: PeriodBudget.build({}))),
        "max_body_bytes": (integer(ge=1), 1_000_000),
    }

    def after(self) -> None:
        names = [k.name for k in self.keys]
        if len(names) != len(set(names)):
            raise Unsure  # "serve key names must be unique"


class Policy(Record):
    version: Literal[1]
    name: str
    providers: dict[str, ProviderConfig]
    workers: dict[str, WorkerConfig]
    tiers: dict[str, TierConfig]
    default_tier: str | None
    pricing: dict[str, Price]
    risk: RiskSettings
    defaults: Defaults
    serve: ServeSettings
    fields: ClassVar[Fields] = {
        "version": (one_of(1), 1),
        "name": (string, "default"),
        "providers": (dict_of(record(ProviderConfig)), REQUIRED),
        "workers": (dict_of(record(WorkerConfig)), REQUIRED),
        "tiers": (dict_of(record(TierConfig)), Factory(_default_tiers)),
        "default_tier": (optional(string), None),
        "pricing": (dict_of(record(Price)), Factory(dict)),
        "risk": (record(RiskSettings), Factory(lambda: RiskSettings.build({}))),
        "defaults": (record(Defaults), Factory(lambda: Defaults.build({}))),
        "serve": (record(ServeSettings), Factory(lambda: ServeSettings.build({}))),
    }

    def after(self) -> None:
        if not self.tiers or (
            self.default_tier is not None and self.default_tier not in self.tiers
        ):
            raise Unsure  # "a policy needs at least one tier" / "default_tier ... is not one"

    def worker_budget_credits(self, worker: str) -> Decimal:
        cfg = self.workers[worker]
        return cfg.credits if cfg.credits else self.defaults.credits_per_call
