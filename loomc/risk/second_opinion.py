"""A release that asks a second release about short prompts, and about prompts in other
languages (``releases.SECOND_OPINION``).

Why: the heads fitted for ordinary traffic's weights (v28, v30) halve the harmless everyday
requests escalated, but rank short questions badly: on the diagnostic short-question-test (160
prompts of at most 60 characters) v30 missed 10 of the 80 high ones and v27 2, while v30 spared
only 5 of the 80 harmless ones v27 escalated (evals/routing/README.md). Short prompts are a
small share of ordinary traffic, so asking v27 about them, and escalating when either release
does, buys back v27's recall where v30 loses it for a little of v27's cost (v31). v33 also asks
about prompts of at most 160 characters that do not read as English (``loomc.risk.language``):
the one high prompt v31 missed in round 44 and v30 in round 43 that v27 caught was each a
casual Spanish message of 118-141 characters. (v32 made v33's decisions and failed its latency
gate: two static stages' products on a quarter of the reference prompts.)

The second release is a ``SemanticProfiler`` of its own (its files, thresholds, band and rules)
built with the same options but ``release``; both share the process's encoders (the same
LoRA delta), so the second costs its router files, not another MiniLM. Its profile replaces
this one's only when it escalates and this one does not, with a first reason saying so.

What the two share, so that asking costs little more than the second head: v27's train prompts
are the first 6,595 of v30's in both stages, so the second release's routers hold views of the
first's indexes (``RouterWeights.sharing_rows``, 15 MB less), and a prompt asked within one call
reads its static embedding and the whole blocks of its float32 product from the first release's
(``similarities`` computes whole blocks of ``SIM_BLOCK`` rows alike in both; only the second's
last, partial block is multiplied again, so every number is the one it computes alone). MiniLM's
embedding of a prompt both cascades send to it is made once per call (``embeddings``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskProfile
from loomc.risk.bounded import bounded
from loomc.risk.evaluate import escalates
from loomc.risk.files import installed_dir
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.memo import one_pass
from loomc.risk.releases import SECOND_OPINION, SecondOpinion
from loomc.risk.semantic import SemanticProfiler

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from loomc.risk.router import RouterWeights

# The first release's static embedding and float32 product row of each prompt it may ask about,
# for the call in progress (one per context: concurrent calls never read each other's).
_ROWS: ContextVar[dict[str, tuple[Any, Any]] | None] = ContextVar("loomc_second_rows", default=None)


class SecondOpinionProfiler(SemanticProfiler):
    """A release's profiler that also asks ``SECOND_OPINION``'s release about some prompts."""

    def __init__(
        self,
        settings: RiskSettings,
        keywords: KeywordProfiler,
        *,
        minilm: Callable[[], Path | None] = installed_dir,
    ) -> None:
        super().__init__(settings, keywords, minilm=minilm)
        self.asking: SecondOpinion = SECOND_OPINION[self.release]
        options = {**settings.options, "release": self.asking.release}
        self.opinion = AskedRelease(
            settings.model_copy(update={"options": options}), keywords, self, minilm=minilm
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
        # the second release reads the facts the first found (keywords, cues) and its rows
        token = _ROWS.set({})
        try:
            with one_pass():
                return self._both(prompts, hints)
        finally:
            _ROWS.reset(token)

    def _first_stage(self, prompts: list[str]) -> tuple[npt.NDArray[Any], npt.NDArray[np.float32]]:
        emb, sims = super()._first_stage(prompts)
        rows = _ROWS.get()
        if rows is not None:  # only the prompts it may ask about: not a copy of every product
            for i, prompt in enumerate(prompts):
                if self.asking.asks(prompt):
                    rows[prompt] = (emb[i], sims[i])
        return emb, sims

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
                        f"{self._which(shown[i])}: release {self.opinion.release} escalates it, "
                        f"{self.release} alone would not"
                    )
                    mine[i] = replace(risk, reasons=(note, *risk.reasons))
        return mine

    def _which(self, text: str) -> str:
        size = len(text.strip())
        if size <= self.asking.max_chars:
            return f"short prompt ({size} characters <= {self.asking.max_chars})"
        return f"not English ({size} characters <= {self.asking.max_other})"

    def load(self) -> None:
        """Read every weight both releases may need."""
        super().load()
        self.opinion.load()


class AskedRelease(SemanticProfiler):
    """The release asked (``SecondOpinionProfiler.opinion``): a ``SemanticProfiler`` whose
    routers share the asking release's indexes where theirs are its first rows, and whose
    static stage reads the asking release's rows of the call in progress."""

    def __init__(
        self,
        settings: RiskSettings,
        keywords: KeywordProfiler,
        first: SemanticProfiler,
        *,
        minilm: Callable[[], Path | None] = installed_dir,
    ) -> None:
        self._first = first  # before the routers are read (``_load_router``)
        super().__init__(settings, keywords, minilm=minilm)

    def _load_router(self, path: Path) -> RouterWeights:  # type: ignore[override]
        from loomc.risk.encoders import shared_router

        first = self._first  # its first stage beside this one's, its MiniLM stage beside this one's
        theirs = first.router if path == self.data_path else first.second
        return shared_router(path, prefix_of=theirs)

    def _first_stage(self, prompts: list[str]) -> tuple[npt.NDArray[Any], npt.NDArray[np.float32]]:
        import numpy as np

        from loomc.risk.router import SIM_BLOCK, similarities

        rows = _ROWS.get()
        index = self.router.train_emb
        if (
            not rows
            or any(p not in rows for p in prompts)
            or self.encoder is not self._first.encoder
            or not _is_head_of(index, self._first.router.train_emb)
        ):
            return super()._first_stage(prompts)
        emb = np.stack([rows[p][0] for p in prompts])
        whole = len(index) - len(index) % SIM_BLOCK  # the blocks both products compute alike
        head = np.stack([rows[p][1][:whole] for p in prompts])
        tail = similarities(emb.astype(np.float32), index[whole:])
        return emb, np.hstack([head, tail])


def _is_head_of(index: Any, other: Any) -> bool:
    """Whether ``index`` is a view of ``other``'s first rows (``RouterWeights.sharing_rows``)."""
    return (
        index.dtype == other.dtype
        and index.strides == other.strides
        and len(index) <= len(other)
        and index.ctypes.data == other.ctypes.data
    )
