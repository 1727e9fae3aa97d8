"""Build the profiler a policy names; the semantic one is an optional extra, imported lazily.

``auto`` (the default) is the best profiler this install can run: ``semantic`` when numpy is
installed (``pip install loomc[semantic]``): its static stage runs from files shipped with
loomc, and its MiniLM stage joins when MiniLM's weights are installed too; else ``keywords``,
the zero-dependency fallback, quietly. ``describe`` says which one is active and why, for
``loomc doctor``. Naming ``semantic`` explicitly and lacking numpy falls back with a ``notice``
that ``loomc run`` prints.

``minilm`` (a callable returning MiniLM's weights folder, or None for "not installed") is how a
caller chooses where the MiniLM stage comes from; by default, the installed package.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskProfiler, RiskSettingsError
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.reference import ReferenceProfiler

INSTALL_HINT = "pip install 'loomc[semantic]' (numpy), or scripts/setup --semantic"

MiniLMFinder = Callable[[], Path | None]


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


def make_profiler(settings: RiskSettings, *, minilm: MiniLMFinder | None = None) -> RiskProfiler:
    """Return the configured profiler; ``semantic`` falls back to keywords with a ``notice``,
    ``auto`` silently (the reason is kept on ``fallback``). ``minilm``: see the module doc."""
    keywords = make_keywords(settings)
    if settings.profiler in ("semantic", "auto"):
        try:  # it checks ``risk.options`` first (``loomc.risk.options``), even on a light install
            from loomc.risk.releases import SECOND_OPINION, release_of
            from loomc.risk.semantic import SemanticProfiler

            cls: type[SemanticProfiler] = SemanticProfiler
            opts = settings.options
            if release_of(opts) in SECOND_OPINION and not opts.get("data"):
                from loomc.risk.second_opinion import SecondOpinionProfiler

                cls = SecondOpinionProfiler  # a release that asks another about short prompts
            if minilm is None:
                profiler: RiskProfiler = cls(settings, keywords)
            else:
                profiler = cls(settings, keywords, minilm=minilm)
        except RiskSettingsError:
            raise
        except ValueError as exc:  # a risk.options value the profiler cannot take
            raise RiskSettingsError(f"policy risk section: {exc}") from None
        except (ImportError, OSError) as exc:  # numpy not installed, or a data file missing
            reason = f"semantic risk profiler unavailable ({exc}); using keywords"
            keywords.fallback = reason
            if settings.profiler == "semantic":
                keywords.notice = f"{reason} (install: {INSTALL_HINT})"
            return keywords
        return profiler
    from loomc.risk.options import first_error

    error = first_error(settings.options)
    if error is not None:  # refused alike by run, eval, serve and doctor, whichever profiler
        raise RiskSettingsError(f"policy risk section: {error}")
    return ReferenceProfiler() if settings.profiler == "reference" else keywords


def describe(settings: RiskSettings, *, minilm: MiniLMFinder | None = None) -> tuple[bool, str]:
    """(ok, one line) naming the profiler ``settings`` gets on this install and why, for the
    doctor. Not ok only when ``semantic`` is asked for by name and cannot run. Loads no
    weights (the routers' small files only)."""
    try:
        profiler = make_profiler(settings, minilm=minilm)
    except RiskSettingsError as exc:
        return False, f"{settings.profiler} ({exc})"
    asked = settings.profiler
    if profiler.name == "semantic":
        data = getattr(profiler, "data_path", None)
        weights = getattr(data, "name", data)
        second = getattr(profiler, "second_encoder", None)
        if second is not None:
            backend = second.backend  # numpy, or onnxruntime (OrtMiniLM)
            low, high = profiler.band  # type: ignore[attr-defined]
            how = (
                f"static stage, MiniLM on {backend} for its uncertain band ({low:.2f}, {high:.2f})"
            )
            delta = getattr(getattr(second, "delta", None), "path", None)
            if delta is not None:  # a LoRA-tuned release (v12): the delta merged into the base
                how += f", tuned by LoRA delta {delta.name}"
            how += f" (weights in {second.path})"
        else:
            missing = getattr(profiler, "minilm_missing", None)
            how = "static stage alone"
            if missing:
                from loomc.risk.semantic import MINILM_HINT

                how += f": {missing}; for the MiniLM stage: {MINILM_HINT}"
        if settings.options.get("data"):
            which = "a file given by risk.options.data, no rules"
        else:  # a release may serve another's files (v14, v15: v13's, each with one more rule)
            rules = ", ".join(getattr(profiler, "rules", ())) or "none"
            which = f"release {getattr(profiler, 'release', '?')}, rules: {rules}"
            opinion = getattr(profiler, "opinion", None)  # loomc.risk.second_opinion
            if opinion is not None:
                asking = profiler.asking  # type: ignore[attr-defined]
                which += f"; on a prompt of at most {asking.max_chars} characters"
                if asking.max_other:
                    which += f" (or {asking.max_other} not in English)"
                which += (
                    f" it asks release {opinion.release} too ({opinion.data_path.name}, band "
                    f"({opinion.band[0]:.2f}, {opinion.band[1]:.2f})) and escalates when either does"
                )
        return True, f"semantic ({asked}; {weights}, {how}; {which})"
    fallback = getattr(profiler, "fallback", None)
    if fallback:
        return (
            asked != "semantic",
            f"{profiler.name} ({asked}: {fallback}; install: {INSTALL_HINT})",
        )
    return True, f"{profiler.name} ({asked})"
