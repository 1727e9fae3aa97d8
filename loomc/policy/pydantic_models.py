"""Pydantic models of a YAML policy file: the reference the fast models are checked against.

:mod:`loomc.policy.models` holds the classes the rest of loomc uses, validated by hand on the
common path because building these pydantic schemas costs ~60 ms (plus ~45 ms to import
pydantic) at every start of ``loomc check`` or ``loomc run``. This module is imported only where
it does a job the hand-written path does not: a policy the fast path is unsure of (an error, a
value pydantic coerces such as ``"5"`` for an int) is validated here, so every diagnostic keeps
pydantic's exact wording; and ``loomc schema`` exports its JSON Schema from these classes.
``tests/compiler/test_policy_models.py`` checks that both agree, field by field and on generated
policies. Change a field here and in ``models.py`` together.

A policy is the part of a project that changes with the deployment (which gateway, which models,
what they cost) while `.loom` pipelines describe the shape of the work. Amounts are exact
decimals and durations are normalised to milliseconds at validation time so that every later
stage sees one unit per dimension.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from loomc.policy.values import (  # the validators' logic is shared, written once
    _AMOUNT_SCHEMA,
    _DURATION_SCHEMA,
    ENV_REF,
    MAX_AMOUNT,
    ProviderType,
    _decimal,
    _duration,
)
from loomc.units import Budget

DurationMs = Annotated[
    int, BeforeValidator(_duration), Field(ge=0, le=MAX_AMOUNT), WithJsonSchema(_DURATION_SCHEMA)
]
Amount = Annotated[
    Decimal, BeforeValidator(_decimal), Field(ge=0, le=MAX_AMOUNT), WithJsonSchema(_AMOUNT_SCHEMA)
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    @field_validator("*", mode="after")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        """No number past ``MAX_AMOUNT`` anywhere: later stages multiply them into worst cases
        and print them, and a 5,000-digit int cannot even be printed."""
        number = isinstance(value, int | float | Decimal) and not isinstance(value, bool)
        if number and abs(value) > MAX_AMOUNT:
            raise ValueError(f"at most {MAX_AMOUNT:_} (10^15)".replace("_", ","))
        return value


# --- mock provider script ----------------------------------------------------------------------


class MockFault(_Model):
    """A fault the mock injects: HTTP status, timeout, or a stream cut after some tokens."""

    kind: Literal["status", "timeout", "stream-cut", "malformed"]
    status: int = 500
    retry_after_s: float | None = None
    after_tokens: int = 3
    times: int = Field(1, ge=1, description="how many attempts fail before the call succeeds")


class MockRule(_Model):
    """First matching rule wins; unset matchers match anything."""

    role: str | None = None
    model: str | None = None
    pattern: str | None = Field(None, description="regex searched in the last user message")
    response: str | None = None
    latency_ms: DurationMs | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    spent_credits: Amount | None = None
    fault: MockFault | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        """A pattern that does not compile is a policy error (LOOM603), not a traceback:
        ``re.error`` is no ValueError, so pydantic would let it through."""
        if value is not None:
            try:
                re.compile(value)
            except (re.error, RecursionError, OverflowError) as exc:
                raise ValueError(f"not a regular expression: {str(exc)[:120]}") from None
        return value


class MockScript(_Model):
    latency_ms: DurationMs = 0
    stream_chunk_words: int = Field(1, ge=1)
    report_usage: bool = True
    rules: list[MockRule] = Field(default_factory=list)
    default_response: str | None = Field(
        None, description="template; {role}, {model}, {task} are substituted"
    )


# --- providers, workers, pricing -------------------------------------------------------------


class ProviderConfig(_Model):
    type: ProviderType
    base_url: str | None = None
    api_key: str | None = Field(None, description="must be an env:NAME reference")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: DurationMs | None = None
    mock: MockScript | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    max_response_bytes: int | None = Field(
        None, ge=1024, description="refuse a response body past this size (default 64 MiB)"
    )


class WorkerConfig(_Model):
    model: str = Field(..., description="provider/model-id")
    label: str | None = None
    group: str | None = Field(None, description="provider group used by independence checks")
    capabilities: list[str] = Field(default_factory=list)
    credits: Amount = Field(Decimal(0), description="credit reservation estimate per call")
    p95_latency: DurationMs | None = None
    max_tokens: int | None = Field(None, ge=1, description="caps every step of this worker")
    timeout: DurationMs | None = None
    retries: int | None = Field(None, ge=0)
    temperature: float | None = Field(
        None, ge=0, le=2, allow_inf_nan=False, description="sampling temperature sent on the wire"
    )

    @field_validator("model")
    @classmethod
    def _has_provider(cls, value: str) -> str:
        if "/" not in value or value.startswith("/") or value.endswith("/"):
            raise ValueError("model must be written provider/model-id")
        return value

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0]

    @property
    def model_id(self) -> str:
        return self.model.split("/", 1)[1]

    @property
    def provider_group(self) -> str:
        return self.group or self.provider


class Price(_Model):
    input_per_million: Amount
    output_per_million: Amount


class TierConfig(_Model):
    calls: int | None = Field(None, ge=0)
    tokens: int | None = Field(None, ge=0)
    credits: Amount | None = None
    cost: Amount | None = None
    latency: DurationMs | None = None

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


class RiskSettings(_Model):
    """Which profiler decides escalation, and the signals the keyword profiler looks for."""

    # auto: semantic when its extra is installed, else keywords (loomc/risk/factory.py)
    profiler: Literal["auto", "keywords", "semantic", "reference"] = "auto"
    signals: dict[str, list[str]] = Field(default_factory=dict)
    research_terms: list[str] = Field(default_factory=list)
    escalate_terms: list[str] = Field(default_factory=list)
    long_prompt_chars: int = 180
    high_threshold: float = Field(0.5, ge=0, le=1)
    medium_threshold: float = Field(0.3, ge=0, le=1)
    options: dict[str, Any] = Field(default_factory=dict)


class Defaults(_Model):
    max_tokens: int | None = Field(None, ge=1)
    timeout: DurationMs = 30_000
    retries: int = Field(0, ge=0)
    input_tokens: int = Field(
        4000, ge=1, description="bound on prompt+instruction tokens; longer prompts are refused"
    )
    credits_per_call: Amount = Decimal(0)
    backoff_base: DurationMs = 250
    backoff_max: DurationMs = 4000


# --- serve: who may call `loomc serve`, and how much ---------------------------------------------


class PeriodBudget(_Model):
    """A ceiling per period (a UTC day) on everything a key, or the whole server, may spend."""

    calls: int | None = Field(None, ge=0)
    tokens: int | None = Field(None, ge=0)
    credits: Amount | None = None
    usd: Amount | None = None

    def budget(self) -> Budget:
        return Budget(calls=self.calls, tokens=self.tokens, credits=self.credits, cost=self.usd)


class ServeKey(_Model):
    """A bearer key clients send; the secret itself lives in the environment, never here."""

    name: str = Field(..., pattern=r"^[A-Za-z0-9_.-]+$")
    key: str = Field(..., description="an env:NAME reference to the bearer token")
    per_run: TierConfig = Field(default_factory=TierConfig, description="ceilings on each run")
    per_day: PeriodBudget = Field(default_factory=PeriodBudget)

    @field_validator("key")
    @classmethod
    def _env_only(cls, value: str) -> str:
        if not ENV_REF.match(value):
            raise ValueError("a serve key must be an env:NAME reference, never the key itself")
        return value


class ServeSettings(_Model):
    keys: list[ServeKey] = Field(default_factory=list)
    per_day: PeriodBudget = Field(default_factory=PeriodBudget, description="the whole server")
    max_body_bytes: int = Field(1_000_000, ge=1)

    @model_validator(mode="after")
    def _unique(self) -> ServeSettings:
        names = [k.name for k in self.keys]
        if len(names) != len(set(names)):
            raise ValueError("serve key names must be unique")
        return self


class Policy(_Model):
    version: Literal[1] = 1
    name: str = "default"
    providers: dict[str, ProviderConfig]
    workers: dict[str, WorkerConfig]
    tiers: dict[str, TierConfig] = Field(default_factory=_default_tiers)
    default_tier: str | None = Field(None, description="the tier a run uses when none is given")
    pricing: dict[str, Price] = Field(default_factory=dict)
    risk: RiskSettings = Field(default_factory=RiskSettings)
    defaults: Defaults = Field(default_factory=Defaults)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @model_validator(mode="after")
    def _tiers_present(self) -> Policy:
        if not self.tiers:
            raise ValueError("a policy needs at least one tier")
        if self.default_tier is not None and self.default_tier not in self.tiers:
            raise ValueError(f"default_tier {self.default_tier!r} is not one of its tiers")
        return self

    def worker_budget_credits(self, worker: str) -> Decimal:
        cfg = self.workers[worker]
        return cfg.credits if cfg.credits else self.defaults.credits_per_call
