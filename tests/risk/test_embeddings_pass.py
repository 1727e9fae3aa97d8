"""With the embedding cache off, MiniLM embeds a prompt once per profile call however many
stages send it there (``EmbeddingCache._once_per_pass``), and again in the next call."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from loomc.risk.embeddings import EmbeddingCache
from loomc.risk.memo import one_pass


class CountingEncoder:
    """An encoder given through the API: each prompt's row is its length, and it counts."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += list(texts)
        return np.array([[float(len(t)), 1.0] for t in texts])


def test_once_per_call_with_the_cache_off() -> None:
    enc, cache = CountingEncoder(), EmbeddingCache(0)
    with one_pass():
        first = cache.embed(enc, ["ab", "abc", "ab"])  # type: ignore[arg-type]
        again = cache.embed(enc, ["abc", "abcd"])  # type: ignore[arg-type]
    assert enc.seen == ["ab", "abc", "abcd"]
    assert first.tolist() == [[2.0, 1.0], [3.0, 1.0], [2.0, 1.0]]
    assert again.tolist() == [[3.0, 1.0], [4.0, 1.0]]
    again[0, 0] = 99.0  # the caller's copy: what the call kept is unchanged
    with one_pass():
        assert cache.embed(enc, ["abc"]).tolist() == [[3.0, 1.0]]  # type: ignore[arg-type]
    assert enc.seen == ["ab", "abc", "abcd", "abc"]  # a new call embeds afresh
    cache.embed(enc, ["abc"])  # type: ignore[arg-type]
    assert enc.seen[-1] == "abc" and len(enc.seen) == 5  # outside a call: as before
