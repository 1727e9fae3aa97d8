"""What the server offers: every runnable pipeline x tier as an OpenAI model id, and ``auto``.

Built once at start-up from what `loomc check` proves: a model id is listed only when its
pipeline x tier compiles and checks, so a request never meets a checker error of the policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loomc.diagnostics import DiagnosticError
from loomc.exec.schedule import profile
from loomc.project import Project
from loomc.risk.base import RiskProfiler, tier_for_level

AUTO = "auto"


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
