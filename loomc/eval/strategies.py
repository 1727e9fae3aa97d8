"""Strategy names of the eval matrix -> (pipeline, tier, profiler) cells.

The tiers are the policy's (a custom tier declared in a policy is a strategy like any other);
``DEFAULT_TIERS`` only stands in when a caller has no policy at hand. ``conductor:PLANNER``
(``conductor:search``, ...) plans each case with that planner instead of running a tier: the
caller (``loomc.api.evaluating``) asks the planner per case, the guard checks the plan, and the
plan's pipeline runs and is checked like any strategy's; ``planner_summary`` condenses the
planners' decisions for the receipt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from loomc.errors import LoomcError

DEFAULT_TIERS = ("lean", "balanced", "strict")
FIXED = ("baseline", "fixed")
DEFAULT_PIPELINE = "general"
CONDUCTOR = "conductor:"


class StrategyError(LoomcError, ValueError):
    pass


@dataclass(frozen=True)
class Strategy:
    name: str
    pipeline: str | None  # None: the case's own pipeline (default `general`)
    tier: str | None
    semantic: bool = False
    planner: str | None = None  # conductor:PLANNER: the case's plan comes from this planner

    def pipeline_for(self, case_pipeline: str | None) -> str:
        return self.pipeline or case_pipeline or DEFAULT_PIPELINE


def parse_strategies(
    spec: str,
    pipelines: set[str] | frozenset[str] = frozenset(),
    tiers: Sequence[str] = DEFAULT_TIERS,
    planners: Sequence[str] = (),
) -> list[Strategy]:
    """Parse ``spec`` (comma-separated) against the project's pipelines, the policy's tiers and
    the conductor's ``planners`` (``conductor:NAME``, optionally ``@semantic``)."""
    out: list[Strategy] = []
    for raw in spec.split(","):
        name = raw.strip()
        if not name:
            continue
        base, _, suffix = name.partition("@")
        semantic = suffix == "semantic"
        tier: str | None = suffix if suffix and not semantic else None
        if base.startswith(CONDUCTOR) and suffix in ("", "semantic"):
            planner = base.removeprefix(CONDUCTOR)
            if planner not in planners:
                known = ", ".join(CONDUCTOR + p for p in planners) or "none here"
                raise StrategyError(f"unknown planner in strategy {name!r} (valid: {known})")
            out.append(Strategy(name, None, None, semantic, planner))
            continue
        if tier is not None and tier not in tiers:
            raise StrategyError(
                f"unknown tier {tier!r} in strategy {name!r} (valid: {', '.join(tiers)}, semantic)"
            )
        if base in FIXED and not suffix:
            out.append(Strategy(name, base, None))
        elif base in tiers and tier is None:
            out.append(Strategy(name, None, base, semantic))
        elif base in pipelines:
            out.append(Strategy(name, base, tier or "balanced", semantic))
        else:
            named = [*FIXED, *tiers, *sorted(pipelines), *(CONDUCTOR + p for p in planners)]
            valid = list(dict.fromkeys(named))  # `baseline` is a strategy and a pipeline
            raise StrategyError(
                f"unknown strategy {name!r} (valid: {', '.join(valid)}, PIPELINE@TIER, X@semantic)"
            )
    if not out:
        raise StrategyError("no strategies given")
    names = [s.name for s in out]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise StrategyError(f"duplicate strategy {dups[0]!r}")
    return out


def planner_summary(
    records: Sequence[Any], strategies: Sequence[Strategy]
) -> dict[str, dict[str, Any]]:
    """Per conductor strategy: how its planner decided (records carry ``conductor``, the guard's
    decision): proposals accepted, fallbacks and why, the policies chosen, and what a served
    planner's own calls cost (``usage``, summed over cases)."""
    out: dict[str, dict[str, Any]] = {}
    for strategy in strategies:
        if strategy.planner is None:
            continue
        decisions: list[Mapping[str, Any]] = [
            r.conductor for r in records if r.strategy == strategy.name and r.conductor
        ]
        policies: dict[str, int] = {}
        reasons: dict[str, int] = {}
        for d in decisions:
            policy = str((d.get("plan") or {}).get("policy"))
            policies[policy] = policies.get(policy, 0) + 1
            for reason in d.get("reasons") or ():
                reasons[reason] = reasons.get(reason, 0) + 1
        # a served planner's own calls, once per case (iterations share the case's plan)
        used = {
            r.case_id: r.conductor["usage"]
            for r in records
            if r.strategy == strategy.name and r.conductor and r.conductor.get("usage")
        }
        out[strategy.name] = {
            "planner": strategy.planner,
            "decisions": len(decisions),
            "accepted": sum(bool(d.get("accepted")) for d in decisions),
            "fallbacks": sum(d.get("fallback") is not None for d in decisions),
            "unavailable": reasons.get("planner_unavailable", 0),
            "policies": dict(sorted(policies.items())),
            "rejections": dict(sorted(reasons.items())),
        }
        if used:
            out[strategy.name]["usage"] = planner_usage_total(used.values())
    return out


def planner_usage_total(used: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The sum of decisions' planner usage: calls and tokens, credits, and the money (None
    when any call was unpriced)."""
    rows = list(used)
    total: dict[str, Any] = {
        axis: sum(int(u.get(axis, 0)) for u in rows)
        for axis in ("calls", "prompt_tokens", "completion_tokens", "tokens")
    }
    total["credits"] = str(sum((_dec(u.get("credits")) for u in rows), Decimal(0)))
    costs = [u.get("cost") for u in rows]
    total["cost"] = None if None in costs else str(sum(map(_dec, costs), Decimal(0)))
    return total


def _dec(value: Any) -> Decimal:
    try:
        out = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal(0)
    return out if out.is_finite() and out > 0 else Decimal(0)
