"""Build the profiler a policy names; the semantic one is an optional extra, imported lazily."""

from __future__ import annotations

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskProfiler
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.reference import ReferenceProfiler


def make_keywords(settings: RiskSettings) -> KeywordProfiler:
    opts = settings.options
    return KeywordProfiler(
        signals=settings.signals or None,
        research_terms=settings.research_terms or None,
        escalate_terms=settings.escalate_terms or None,
        long_prompt_chars=settings.long_prompt_chars,
        negation=bool(opts.get("negation", True)),
        trivia=bool(opts.get("trivia", True)),
    )


def make_profiler(settings: RiskSettings) -> RiskProfiler:
    """Return the configured profiler; ``semantic`` falls back to keywords with a ``notice``."""
    if settings.profiler == "reference":
        return ReferenceProfiler()
    keywords = make_keywords(settings)
    if settings.profiler == "semantic":
        try:
            from loomc.risk.semantic import SemanticProfiler

            profiler: RiskProfiler = SemanticProfiler(settings, keywords)
        except (ImportError, OSError) as exc:  # extra not installed, or its data file missing
            keywords.notice = (
                f"semantic risk profiler unavailable ({exc}); using keywords "
                "(install the 'semantic' extra)"
            )
            return keywords
        return profiler
    return keywords
