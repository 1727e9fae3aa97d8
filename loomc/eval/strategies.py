"""Strategy names of the eval matrix -> (pipeline, tier, profiler) cells.

The tiers are the policy's (a custom tier declared in a policy is a strategy like any other);
``DEFAULT_TIERS`` only stands in when a caller has no policy at hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loomc.errors import LoomcError

DEFAULT_TIERS = ("lean", "balanced", "strict")
FIXED = ("baseline", "fixed")
DEFAULT_PIPELINE = "general"


class StrategyError(LoomcError, ValueError):
    pass


@dataclass(frozen=True)
class Strategy:
    name: str
    pipeline: str | None  # None: the case's own pipeline (default `general`)
    tier: str | None
    semantic: bool = False

    def pipeline_for(self, case_pipeline: str | None) -> str:
        return self.pipeline or case_pipeline or DEFAULT_PIPELINE


def parse_strategies(
    spec: str,
    pipelines: set[str] | frozenset[str] = frozenset(),
    tiers: Sequence[str] = DEFAULT_TIERS,
) -> list[Strategy]:
    """Parse ``spec`` (comma-separated) against the project's pipelines and the policy's tiers."""
    out: list[Strategy] = []
    for raw in spec.split(","):
        name = raw.strip()
        if not name:
            continue
        base, _, suffix = name.partition("@")
        semantic = suffix == "semantic"
        tier: str | None = suffix if suffix and not semantic else None
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
            valid = [*FIXED, *tiers, *sorted(pipelines)]
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
