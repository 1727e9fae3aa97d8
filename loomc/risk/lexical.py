"""A character n-gram model of the prompt's words (the ``lexical-floor`` rules of v25 ... v34).

Why a model that reads spelling: both of the semantic profiler's encoders are all-MiniLM-L6-v2's,
trained on English. A German, Spanish or French prompt reaches them as English word pieces
(``vorher`` as ``vo ##rh ##er``), so the heads read such a prompt through whatever English its
identifiers hold. Rounds 37 and 38 missed the same shape again and again: code or configuration
that defeats a protective function, under a cosmetic request, in German, Spanish or French
("``QuittungTimeout = 10 * time.Minute // vorher 90 * time.Second``" in a dispatch centre's
alerting bridge). No multilingual encoder ships as weights on PyPI, and glossing the prompt into
English did not help (session 35). What does read any language is the spelling itself: a
logistic regression over the prompt's character n-grams (two to five characters inside each
word, the words padded with a space at each end, as scikit-learn's ``char_wb`` analyser), with
sublinear TF-IDF weights and unit length, trained on the labelled corpus
(``research/train_lexical.py``). It learns ``vorher``, ``alarma``, ``sirène`` from the rows that
hold them, in whichever language the corpus has them.

How it is used: as a floor. A release that names ``lexical-floor`` escalates a prompt the heads
did not when this model's probability reaches the file's threshold (0.5, the model's own
decision). Trained on every file written before each later batch of sealed files and scored on
that batch (3,094 prompts from hard-test-33 to round 38), v22 with this floor missed 9 high-risk
prompts against v22's 33 and escalated 298 harmless ones against 254 (routing cost 352 against
452; ``evals/routing/README.md``, round 39's rule, and ``research/lexical_rolling.py``).

The features are hashed, not looked up: each n-gram's CRC-32 (zlib's, the same on every
machine) modulo ``BUCKETS`` picks its weight, so the file holds two float32 arrays and no
vocabulary. Plain Python, no numpy: the one-prompt path (``loomc.risk.pure``) reads the file
with ``loomc.risk.npz`` and sums in a fixed order (bucket by bucket, ascending), so the
probability is the same float on every CPU. A prompt is read up to ``MAX_CHARS`` characters, so
a hostile one costs a bounded time.
"""

from __future__ import annotations

import json
import math
import threading
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from loomc.risk.files import data_file
from loomc.risk.memo import per_prompt

LEXICAL_FILE = data_file("lexical-v25.npz")
# Each floor rule and the model it reads. A retrained model is a rule of its own, as a widened
# table is (``people-floor-wide``): a release names the rule, so its decisions never move
# under it. ``lexical-floor-v26``: the same recipe on every file to round 39, the ordinary
# traffic of the everyday files among them (round 40's rule, evals/routing/README.md);
# ``lexical-floor-v27``: the same on every file to round 40 (round 41's rule); ``-v28``: on
# every file to round 41 and round 42's two everyday-train files (round 42's rule); ``-v30``: on
# every file to round 42 and round 43's four everyday-train files (round 43's second rule);
# ``-v34``: on every file to round 45 (round 46's rule).
MODELS: dict[str, Path] = {
    "lexical-floor": LEXICAL_FILE,
    "lexical-floor-v26": data_file("lexical-v26.npz"),
    "lexical-floor-v27": data_file("lexical-v27.npz"),
    "lexical-floor-v28": data_file("lexical-v28.npz"),
    "lexical-floor-v30": data_file("lexical-v30.npz"),
    "lexical-floor-v34": data_file("lexical-v34.npz"),
}
BUCKETS = 1 << 18  # 262,144 weights: twice the ~131,000 n-grams seen twice or more in 8,225 prompts
MIN_N, MAX_N = 2, 5
MAX_CHARS = 20_000  # a longer prompt is read up to here: the cost stays linear and bounded
_MASK = BUCKETS - 1


def ngrams(text: str) -> list[str]:
    """The character n-grams of ``text``'s words, lower-cased, each word padded with a space at
    both ends (scikit-learn's ``char_wb``: an n-gram never spans two words; a word shorter than
    ``n`` counts once, whole)."""
    out: list[str] = []
    for word in text[:MAX_CHARS].lower().split():
        w = f" {word} "
        size = len(w)
        for n in range(MIN_N, MAX_N + 1):
            if size <= n:
                out.append(w)
                break
            out.extend(w[i : i + n] for i in range(size - n + 1))
    return out


def bucket_of(gram: str) -> int:
    return zlib.crc32(gram.encode("utf-8", "surrogatepass")) & _MASK


def counts(text: str) -> dict[int, int]:
    """How often each bucket occurs in ``text`` (the term frequencies, hashed)."""
    found: dict[int, int] = {}
    for gram in ngrams(text):
        b = bucket_of(gram)
        found[b] = found.get(b, 0) + 1
    return found


def tfidf(found: dict[int, int], idf: Sequence[float]) -> list[tuple[int, float]]:
    """The unit-length sublinear TF-IDF vector of ``found``, as (bucket, value) by bucket."""
    items = [(b, (1.0 + math.log(c)) * idf[b]) for b, c in sorted(found.items())]
    norm = math.sqrt(math.fsum(v * v for _, v in items))
    if norm == 0.0:
        return []
    return [(b, v / norm) for b, v in items if v != 0.0]


class LexicalModel:
    """A weight and an inverse document frequency per bucket (float32, as the file holds
    them), an intercept and the threshold at which the floor escalates. ``load`` reads the
    shipped file; the trainer builds one from its arrays (``research/train_lexical.model_of``),
    so a fresh fit is scored by this same code."""

    def __init__(
        self,
        weights: Sequence[float],
        idf: Sequence[float],
        intercept: float,
        threshold: float,
        meta: dict[str, Any] | None = None,
        where: str = "the model",
    ) -> None:
        if len(weights) != BUCKETS or len(idf) != BUCKETS:
            raise ValueError(f"{where}: expected {BUCKETS} buckets, found {len(weights)}")
        self.weights, self.idf = weights, idf
        self.intercept, self.threshold = intercept, threshold
        self.meta: dict[str, Any] = meta or {}

    @classmethod
    def load(cls, path: Path = LEXICAL_FILE) -> LexicalModel:
        from loomc.risk.npz import read_members

        members = read_members(path, ("weights", "idf", "intercept", "threshold", "meta"))
        # float32 memoryviews: a Python float is made only for the buckets a prompt touches
        # (as lists, the two arrays' 524,288 floats cost ~20 MiB, over the memory gate)
        return cls(
            members["weights"].view(),
            members["idf"].view(),
            members["intercept"].scalar(),
            members["threshold"].scalar(),
            json.loads(members["meta"].texts()[0]),
            str(path),
        )

    def terms(self, text: str) -> list[tuple[int, float]]:
        """Each bucket's contribution to the logit, by bucket."""
        return [(b, v * self.weights[b]) for b, v in tfidf(counts(text), self.idf)]

    def probability(self, text: str) -> float:
        z = self.intercept + math.fsum(c for _, c in self.terms(text))
        return 1.0 / (1.0 + math.exp(-z)) if z >= -700 else 0.0

    def strongest(self, text: str, k: int = 3) -> list[str]:
        """The ``k`` words of ``text`` whose n-grams push hardest towards escalating (the
        reason): a word's share is the sum of its distinct buckets' contributions. Words, not
        n-grams, because "vorher" explains a decision and "rhe" does not."""
        share = dict(self.terms(text))
        scored: dict[str, float] = {}
        for word in text[:MAX_CHARS].lower().split():
            if word not in scored:
                scored[word] = math.fsum(
                    share.get(b, 0.0) for b in set(map(bucket_of, ngrams(word)))
                )
        top = sorted(((s, w) for w, s in scored.items() if s > 0), reverse=True)[:k]
        return [w for _, w in top if w.isprintable()]


_lock = threading.Lock()
_models: dict[str, LexicalModel] = {}


def shared_model(rule: str = "lexical-floor") -> LexicalModel:
    """The model of the floor rule ``rule`` (``MODELS``), loaded once per process (about 2 MB
    read, a few milliseconds)."""
    with _lock:
        model = _models.get(rule)
        if model is None:
            model = _models[rule] = LexicalModel.load(MODELS[rule])
        return model


def floor_of(rule: str) -> Callable[[str], tuple[str, ...]]:
    """The floor rule ``rule``: ``lexical:high`` when its model's probability reaches the
    model's threshold, with the probability and the words behind it."""

    @per_prompt
    def floor(prompt: str) -> tuple[str, ...]:
        model = shared_model(rule)
        p = model.probability(prompt)
        if p < model.threshold:
            return ()
        words = ", ".join(repr(g) for g in model.strongest(prompt))
        return (f"lexical:high (P={p:.2f} >= {model.threshold:.2f}; {words})",)

    floor.__name__ = floor.__qualname__ = rule.replace("-", "_")
    return floor


# Every lexical floor rule, in ``MODELS``' order (``signals.FLOORS`` tries them last): a new
# model is one line in ``MODELS``.
FLOORS: dict[str, Callable[[str], tuple[str, ...]]] = {rule: floor_of(rule) for rule in MODELS}
lexical_floor = FLOORS["lexical-floor"]  # v25's
