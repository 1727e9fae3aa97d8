"""A release that asks a second release about short prompts (``releases.SECOND_OPINION``).

Why: the heads fitted for ordinary traffic's weights (v28, v30) halve the harmless everyday
requests escalated, but rank short questions badly: on the diagnostic short-question-test (160
prompts of at most 60 characters) v30 missed 10 of the 80 high ones and v27 2, while v30 spared
only 5 of the 80 harmless ones v27 escalated (evals/routing/README.md). Short prompts are a
small share of ordinary traffic, so asking v27 about them, and escalating when either release
does, buys back v27's recall where v30 loses it for a little of v27's cost (v31). v32, which
also asked about prompts up to 160 characters that do not read as English, failed its latency
gate before round 45 (two releases' static stages on a quarter of the reference prompts).

The second release is a ``SemanticProfiler`` of its own (its files, thresholds, band and rules)
built with the same options but ``release``; both share the process's encoders (the same
LoRA delta), so the second costs its router files, not another MiniLM. Its profile replaces
this one's only when it escalates and this one does not, with a first reason saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskProfile
from loomc.risk.bounded import bounded
from loomc.risk.evaluate import escalates
from loomc.risk.files import installed_dir
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.memo import one_pass
from loomc.risk.releases import SECOND_OPINION
from loomc.risk.semantic import SemanticProfiler


class SecondOpinionProfiler(SemanticProfiler):
    """A release's profiler that also asks ``SECOND_OPINION``'s release about short prompts."""

    def __init__(
        self,
        settings: RiskSettings,
        keywords: KeywordProfiler,
        *,
        minilm: Callable[[], Path | None] = installed_dir,
    ) -> None:
        super().__init__(settings, keywords, minilm=minilm)
        self.asking = asking = SECOND_OPINION[self.release]
        options = {**settings.options, "release": asking.release}
        self.opinion = SemanticProfiler(
            settings.model_copy(update={"options": options}), keywords, minilm=minilm
        )
        # One cache of embeddings for both: it is kept per encoder, and both releases' encoders
        # are the process's shared ones, so a prompt each release embeds is embedded once.
        self.opinion._embeddings = self._embeddings

    def profile_many(
        self, prompts: Sequence[str], pipeline_hints: Iterable[str | None] | None = None
    ) -> list[RiskProfile]:
        prompts = list(prompts)
        hints: list[str | None] = (
            list(pipeline_hints) if pipeline_hints is not None else [None] * len(prompts)
        )
        with one_pass():  # the second release reads the facts the first found (keywords, cues)
            return self._both(prompts, hints)

    def _both(self, prompts: list[str], hints: list[str | None]) -> list[RiskProfile]:
        mine = super().profile_many(prompts, hints)
        shown = [bounded(p) for p in prompts]  # what both releases read
        asked = [
            i
            for i, (text, risk) in enumerate(zip(shown, mine, strict=True))
            if self.asking.asks(text) and not escalates(risk, text)
        ]
        if asked:
            theirs = self.opinion.profile_many(
                [prompts[i] for i in asked], [hints[i] for i in asked]
            )
            for i, risk in zip(asked, theirs, strict=True):
                if escalates(risk, shown[i]):
                    note = (
                        f"short prompt ({len(shown[i].strip())} characters <= "
                        f"{self.asking.max_chars}): release {self.opinion.release} escalates it, "
                        f"{self.release} alone would not"
                    )
                    mine[i] = replace(risk, reasons=(note, *risk.reasons))
        return mine

    def load(self) -> None:
        """Read every weight both releases may need."""
        super().load()
        self.opinion.load()
