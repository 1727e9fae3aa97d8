"""Which risk profiler a run needs: the policy's when a guard reads the risk, else the keyword
rules, so a run whose steps are fixed never loads the semantic weights (a profiler the caller
passes is always used as given).

``risk.profiler: auto`` (the default) is the semantic profiler when it is installed: its first
profile in a process reads the MiniLM weights (about a second), and each profile is a forward
pass. A pipeline x tier whose guards never read ``risk`` (``strict``, ``lean``, ``fixed``,
``baseline``) runs the same steps whatever the profile says, so paying for it there would buy
only the receipt's ``risk`` field; that field then holds the keyword rules' profile and says so.
"""

from __future__ import annotations

from dataclasses import replace

from loomc.ir.model import And, Compare, Contains, Expr, Fact, Matches, Not, Or, Pipeline
from loomc.policy.models import RiskSettings
from loomc.project import Project
from loomc.risk.base import RiskProfile, RiskProfiler, tier_for_level
from loomc.risk.factory import make_keywords, make_profiler


def reads_risk(expr: Expr | None) -> bool:
    """Whether a guard reads the risk profile (``risk``, ``risk.kind``, ``risk.signals``...)."""
    match expr:
        case Fact(path=path):
            return path[0] == "risk"
        case Compare(left=left, right=right):
            return reads_risk(left) or reads_risk(right)
        case Contains(item=item, collection=coll):
            return reads_risk(item) or reads_risk(coll)
        case Matches(subject=subject):
            return reads_risk(subject)
        case And(items=items) | Or(items=items):
            return any(reads_risk(i) for i in items)
        case Not(item=item):
            return reads_risk(item)
    return False


class KeywordsOnly:
    """The profiler of a run that no guard lets the risk decide: the keyword rules (micro-
    seconds, no weights), each profile saying why. A fixed tier (``strict``, ``fixed``) runs
    the same steps whatever the risk, so loading the semantic weights for it (about a second
    on a run's first profile) would buy nothing but the receipt's ``risk`` field."""

    name = "keywords"
    blocking = False

    def __init__(self, keywords: RiskProfiler, why: str) -> None:
        self.keywords = keywords
        self.why = why

    def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile:
        found = self.keywords.profile(prompt, pipeline_hint)
        return replace(found, reasons=(*found.reasons, self.why))


_POLICY_PROFILERS: dict[str, RiskProfiler] = {}
_POLICY_PROFILERS_MAX = 16


def policy_profiler(settings: RiskSettings) -> RiskProfiler:
    """The profiler ``settings`` name, one per distinct settings per process: ``loomc.run``
    without ``profiler=`` used to build a new one per call, so the executor's profile cache
    (keyed by the profiler) never hit for a repeated prompt, and the semantic profiler's own
    caches started empty on every run."""
    key = settings.model_dump_json()
    found = _POLICY_PROFILERS.get(key)
    if found is None:
        if len(_POLICY_PROFILERS) >= _POLICY_PROFILERS_MAX:
            _POLICY_PROFILERS.pop(next(iter(_POLICY_PROFILERS)))
        found = _POLICY_PROFILERS[key] = make_profiler(settings)
    return found


def profiler_for(
    pipeline: Pipeline, settings: RiskSettings, given: RiskProfiler | None = None
) -> RiskProfiler:
    """The profiler a run of ``pipeline`` needs: ``given`` when the caller passed one (a server
    keeps its own warm, and may have picked the tier with it); else the policy's when a guard
    reads the risk or it is cheap (``keywords``, ``reference``); else, instead of building a
    blocking one (``auto``, ``semantic``: weights and a forward pass), the keyword rules
    (:class:`KeywordsOnly`): nothing a profile says changes which steps run."""
    if given is not None:
        return given
    if settings.profiler in ("keywords", "reference") or any(
        reads_risk(step.guard) for step in pipeline.graph.steps()
    ):
        return policy_profiler(settings)
    why = (
        f"no step of {pipeline.key} reads the risk: keyword rules only "
        f"(risk.profiler {settings.profiler} not loaded)"
    )
    return KeywordsOnly(make_keywords(settings), why)


AUTO_TIER = "auto"


async def auto_tier(
    project: Project, name: str, prompt: str, given: RiskProfiler | None
) -> tuple[str | None, RiskProfiler | None]:
    """``tier="auto"``: the risk profile picks the tier of pipeline ``name``, by the rule of
    ``loomc serve``'s ``auto`` model and the Studio's (``tier_for_level``: low → its first tier,
    high → its last, medium → balanced). Returns the tier (None for a pipeline without tiers,
    or an unknown one: compiling it then says so) and the profiler that chose it, which the run
    keeps so its receipt's risk is the profile behind the choice."""
    from loomc.exec.schedule import profile

    mine = project.variants(name)  # only the files bearing on it, as the run will compile
    tiers = [p.tier for p in mine if p.tier is not None]
    if not tiers:
        return None, given
    profiler = given or policy_profiler(project.policy.risk)
    found = await profile(profiler, prompt, mine[0].kind)
    return tier_for_level(found.level, tiers), profiler
