"""What goes into the semantic profiler's classifier, besides the embedding: the keyword rules'
view of the prompt alone and the situational cues (``loomc.risk.cues``); the nearest-neighbour
features' names.

Apart from ``loomc.risk.router`` (the trained weights, read with numpy), which re-exports these:
the plain-Python path (``loomc.risk.pure``) builds the same features for one prompt without
importing numpy or defining the weights' class.
"""

from __future__ import annotations

import math

from loomc.risk.cues import CUE_NAMES, cue_vector
from loomc.risk.evaluate import VERBS
from loomc.risk.keywords import DEFAULT_SIGNALS, KeywordProfiler
from loomc.risk.reference import js_length

SIGNAL_NAMES: tuple[str, ...] = tuple(DEFAULT_SIGNALS)


def feature_names(dim: int) -> list[str]:
    """Column names of the classifier's input, in order."""
    return (
        [f"emb{i}" for i in range(dim)]
        + [f"sig:{n}" for n in SIGNAL_NAMES]
        + ["kw:low", "kw:medium", "kw:high", "kw:research", "kw:trivia", "verbs", "log_len"]
        + [f"cue:{n}" for n in CUE_NAMES]
        + list(KNN_NAMES)
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


def router_features(keywords: KeywordProfiler, prompt: str) -> list[float]:
    """Every non-embedding feature of the classifier: keyword evidence, then the cues."""
    return keyword_features(keywords, prompt) + cue_vector(prompt)


KNN_K = 5
KNN_NAMES = ("knn:escalate-share", "knn:nearest-escalate", "knn:nearest-direct")
