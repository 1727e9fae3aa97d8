"""From a real run to what a planner reads: policy workers, the prompt's risk, the ceilings.

* **Workers** (`worker_profiles`): one `WorkerProfile` per policy worker that can fill a plan
  role (routers, whose capabilities are only routing/classification, are left out). Credits are
  the worker's per-call reservation estimate (`Policy.worker_budget_credits`, 3 dp), the p95 is
  the worker's `p95_latency` (or, when the policy has none, its timeout: the most a call can
  take), the provider group is the worker's `group` (or its provider). A policy carries no
  quality or pass-rate measurements, so both come from `priors` when given, else the flat
  defaults `DEFAULT_QUALITY` / `DEFAULT_PASS_RATE` (0.85 / 0.8: between the v2 efficient and
  frontier anchors, so no worker is preferred for a quality it was never measured to have).
  Strengths are the worker's capabilities plus their v2-vocabulary synonyms
  (`verification` → `review`, `analysis` → `reasoning`, `final-answer` → `writing`, ...), so the
  v2 role-fitness rules see them.
* **Task** (`task_profile`): the six v2 numbers estimated from the prompt and its risk profile
  (`loomc.conductor.estimate`: which profiler output and which prompt cues drive each); the
  category from the signals or kind; the summary is the prompt's first line (≤ 160 chars);
  `input_tokens` is the local token estimate snapped to the v2 grid {120, 160, ..., 8000}.
* **Constraints** (`hard_limits`): the compiled pipeline x tier's effective budget (pipeline and
  tier ceilings tightened by the command line). Missing axes get the reference's defaults:
  calls 3; credits `calls x max(worker credits)` (CONDUCTOR-V2 §7.1; 3 dp, rounded down); latency the strict preset
  120 s. `minimum_quality` (a soft target) is 0.7 / 0.8 / 0.88 for low / medium / high risk.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from loomc.conductor.estimate import estimate
from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile
from loomc.ir.model import Pipeline
from loomc.policy.models import Policy
from loomc.providers.base import estimate_tokens
from loomc.risk.base import RiskProfile
from loomc.units import Budget

DEFAULT_QUALITY = 0.85
DEFAULT_PASS_RATE = 0.8
ROUTER_CAPABILITIES = frozenset({"routing", "classification"})
STRENGTH_SYNONYMS: dict[str, str] = {
    "verification": "review",
    "critique": "review",
    "audit": "review",
    "analysis": "reasoning",
    "security": "reasoning",
    "privacy": "reasoning",
    "final-answer": "writing",
    "summarization": "synthesis",
    "implementation": "coding",
}

LEVEL_QUALITY_TARGET = {"low": 0.7, "medium": 0.8, "high": 0.88}
SIGNAL_CATEGORY = (
    ("security", "security"),
    ("identity", "identity"),
    ("money", "financial"),
    ("privacy", "security"),
    ("safety", "health"),
    ("legal", "legal"),
    ("concurrency", "coding"),
    ("production-code", "coding"),
)
KIND_CATEGORY = {"research": "research", "code-review": "review", "general": "general"}
DEFAULT_CALLS = 3
DEFAULT_LATENCY_MS = 120_000
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")  # a .loom NAME: plans compile to .loom


def _r4(x: float) -> float:
    return round(float(x), 4)


def plan_workers(policy: Policy, ids: Sequence[str] | None = None) -> list[str]:
    """The workers a plan may use: `ids` (validated), else every non-router worker in order."""
    if ids is not None:
        unknown = [w for w in ids if w not in policy.workers]
        if unknown:
            raise ValueError(
                f"unknown worker(s) {', '.join(unknown)}; workers are {', '.join(policy.workers)}"
            )
        if len(set(ids)) != len(ids):
            raise ValueError("a worker is listed twice")
        chosen = list(ids)
    else:
        chosen = [
            name
            for name, w in policy.workers.items()
            if not (w.capabilities and set(w.capabilities) <= ROUTER_CAPABILITIES)
        ]
    bad = [w for w in chosen if not _NAME.match(w)]
    if bad:
        raise ValueError(f"worker name(s) {', '.join(bad)} cannot be used in a pipeline")
    if not chosen:
        raise ValueError("the policy has no worker that can fill a plan role")
    return chosen


def worker_profiles(
    policy: Policy,
    ids: Sequence[str] | None = None,
    priors: Mapping[str, tuple[float, float]] | None = None,
) -> list[WorkerProfile]:
    """Profiles of the plan workers; `priors` maps worker id → (quality, pass_rate)."""
    out = []
    for name in plan_workers(policy, ids):
        cfg = policy.workers[name]
        quality, pass_rate = (priors or {}).get(name, (DEFAULT_QUALITY, DEFAULT_PASS_RATE))
        p95 = cfg.p95_latency
        if p95 is None:
            p95 = cfg.timeout or policy.defaults.timeout
        strengths = set(cfg.capabilities)
        strengths |= {STRENGTH_SYNONYMS[c] for c in cfg.capabilities if c in STRENGTH_SYNONYMS}
        out.append(
            WorkerProfile(
                id=name,
                provider_group=cfg.provider_group,
                quality=_r4(quality),
                pass_rate=_r4(pass_rate),
                credits_per_call=round(float(policy.worker_budget_credits(name)), 3),
                p95_latency_ms=int(p95),
                strengths=tuple(sorted(strengths)),
            )
        )
    return out


def _category(risk: RiskProfile) -> str:
    for signal, category in SIGNAL_CATEGORY:
        if signal in risk.signals:
            return category
    return KIND_CATEGORY.get(risk.kind, "general")


def _summary(prompt: str) -> str:
    first = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    return first if len(first) <= 160 else first[:157] + "..."


def task_estimate(prompt: str, risk: RiskProfile) -> tuple[TaskProfile, dict[str, tuple[str, ...]]]:
    """The v2 task fields of one prompt and the cues behind each (`loomc.conductor.estimate`)."""
    tokens = estimate_tokens(prompt)
    snapped = min(8000, max(120, 120 + 40 * round((tokens - 120) / 40)))
    est = estimate(prompt, risk, tokens)
    task = TaskProfile(
        family=f"runtime_{risk.kind.replace('-', '_')}",
        category=_category(risk),
        summary=_summary(prompt),
        risk=est.risk,
        complexity=est.complexity,
        consequence=est.consequence,
        ambiguity=est.ambiguity,
        evidence_need=est.evidence_need,
        reversibility=est.reversibility,
        input_tokens=int(snapped),
    )
    return task, est.drivers


def task_profile(prompt: str, risk: RiskProfile) -> TaskProfile:
    """The v2 task fields of one prompt, estimated from it and its (local) risk profile."""
    return task_estimate(prompt, risk)[0]


@dataclass(frozen=True)
class HardLimits:
    """The ceilings a plan must fit: the v2 view for planners and the full budget for the IR."""

    constraints: Constraints
    budget: Budget  # calls/credits/latency equal to `constraints`; tokens/cost as compiled


def hard_limits(
    budget: Budget,
    workers: Sequence[WorkerProfile],
    risk_level: str = "medium",
) -> HardLimits:
    """Constraints from an effective budget (already tightened by tier and command line)."""
    calls = budget.calls if budget.calls is not None else DEFAULT_CALLS
    if budget.credits is not None:
        credits = budget.credits
    else:
        per_call = max((Decimal(repr(w.credits_per_call)) for w in workers), default=Decimal(0))
        credits = per_call * min(calls, len(workers)) if per_call > 0 else Decimal(0)
    latency = budget.latency_ms if budget.latency_ms is not None else DEFAULT_LATENCY_MS
    # 3 dp like the v2 corpus, rounded down so the ceiling never loosens
    floored = Decimal(credits).quantize(Decimal("0.001"), rounding=ROUND_FLOOR)
    constraints = Constraints(
        max_calls=int(calls),
        max_credits=float(floored),
        max_latency_ms=int(latency),
        minimum_quality=LEVEL_QUALITY_TARGET.get(risk_level, 0.8),
    )
    exact = Budget(
        calls=constraints.max_calls,
        tokens=budget.tokens,
        credits=Decimal(repr(constraints.max_credits)),
        cost=budget.cost,
        latency_ms=constraints.max_latency_ms,
    )
    return HardLimits(constraints, exact)


def limits_for(
    pipeline: Pipeline, workers: Sequence[WorkerProfile], risk: RiskProfile
) -> HardLimits:
    """`hard_limits` of a compiled pipeline x tier (its budget includes the CLI overrides)."""
    return hard_limits(pipeline.budget, workers, risk.level)
