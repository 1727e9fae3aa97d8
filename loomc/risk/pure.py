"""The semantic profiler's static stage for a few prompts, in plain Python: no numpy import.

Why: a cold ``loomc run`` profiles one prompt, and importing numpy to do it costs ~120 ms of one
core, more than everything else the static stage does (issue 16: a cold run <= 0.3 s with the
default ``auto`` profiler). For one prompt the stage is small: the mean of its tokens' int8 rows
times their scales, L2-normalised (``loomc.risk.static``), ~650 cosine similarities to the
router's train prompts, the keyword and cue features, a dot product with the weights and Platt's
sigmoid (``loomc.risk.router``) -- a few ms in Python over the same files, read by
``loomc.risk.npz`` (of the token table, only the prompt's rows).

Same arithmetic, same order, except the dot products: the mean, the nearest-neighbour features,
the standardisation, the clip and the exponential are computed exactly as numpy computes them,
but numpy's dot products run in BLAS, whose summation order and fused multiply-adds depend on
the CPU, and cannot be reproduced here. A probability therefore agrees with the numpy path's to
~1e-15, not bit for bit (``tests/risk/test_pure.py`` holds it within 1e-9 on every corpus
prompt, with identical decisions and reasons; the explanation's nearest prompts may swap at a
tie within float32 rounding, see ``nearest32``). ``loomc.risk.semantic`` takes this path only
for a single prompt (``profile``; a batch is numpy's), while numpy is not imported, for a
process's first ``PURE_PROMPTS`` prompts: after those, numpy's import has paid for itself. An
eval calls ``numpy_from_now`` first, so every probability of its receipt comes from numpy.
"""

from __future__ import annotations

import json
import math
import struct
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from operator import mul
from pathlib import Path
from typing import Any

from loomc.risk.emb32 import read_copy
from loomc.risk.npz import locate_member, read_members

PURE_PROMPTS = 16
"""Prompts a process profiles in plain Python before it imports numpy: ~8 ms each against
~120 ms for numpy's import and ~3 ms a prompt after it."""

_SCALARS = (
    "bias",
    "platt_a",
    "platt_b",
    "threshold",
    "signal_threshold",
    "medium_threshold",
)


class PureRouter:
    """``RouterWeights`` (``loomc.risk.router``) as Python lists: the same fields, read from the
    same file, for one prompt at a time."""

    def __init__(self, path: Path) -> None:
        # The float32 copy of the train embeddings, when one ships for exactly this member,
        # spares inflating and widening the float16 member (~20 ms of a cold run for v11).
        copy = read_copy(path)
        z = read_members(path, skip=("cv_prob",) + (("train_emb",) if copy is not None else ()))
        meta: dict[str, Any] = json.loads(z["meta"].texts()[0]) if "meta" in z else {}
        s = {name: z[name].scalar() for name in _SCALARS}
        self.bias, self.platt_a, self.platt_b = s["bias"], s["platt_a"], s["platt_b"]
        self.threshold, self.signal_threshold = s["threshold"], s["signal_threshold"]
        self.medium_threshold = s["medium_threshold"]
        self.weights = z["weights"].floats()
        self.mean = z["mean"].floats()
        self.scale = z["scale"].floats()
        self.train_ids = tuple(z["train_ids"].texts())
        self.train_labels = tuple(z["train_labels"].bools())
        self.train_levels = tuple(z["train_levels"].texts())
        if copy is not None and copy[1] != len(self.train_ids):  # a copy of another shape
            copy = None
            z.update(read_members(path, ("train_emb",)))
        # float16 -> float32 (exactly: a float is made as each is read), as numpy -> float64
        self.train_flat: Sequence[float]
        if copy is not None:
            self.train_flat, self.rows, self.dim = copy
        else:
            self.train_flat, (self.rows, self.dim) = z["train_emb"].floats(), z["train_emb"].shape
        self._seen = 0  # prompts whose similarities were read from a memoryview
        self.encoder = "static" if meta.get("encoder_kind") == "static" else "minilm"
        self.cascade: str | None = meta.get("cascade") if "cascade_low" in z else None
        self.cascade_low = z["cascade_low"].scalar() if "cascade_low" in z else 0.0
        self.cascade_high = z["cascade_high"].scalar() if "cascade_high" in z else 0.0

    def similarities(self, emb: Sequence[float]) -> list[float]:
        """Cosine similarity of a normalised embedding to every train prompt (float64)."""
        if len(emb) != self.dim:
            raise ValueError(f"an embedding of {len(emb)} numbers, not {self.dim}")
        # One iterator over the flat rows: each ``map`` stops after ``dim`` items, when
        # ``emb`` ends, so it takes the next row without a slice of it ever being made.
        # One read of the attribute: worker threads profile at once (the profiler runs off the
        # event loop), and another may swap the view for its list between two reads of it.
        rows = self.train_flat
        flat = iter(rows)
        sims = [sum(map(mul, emb, flat)) for _ in range(self.rows)]
        if isinstance(rows, memoryview):
            # Read from the float32 view (floats made as read) for the first prompt, ~5 ms less
            # than a list of ~250,000 floats first; a second prompt makes that list (~3 ms),
            # each later one reads it ~1 ms faster than the view. Two threads may both make it.
            self._seen += 1
            if self._seen > 1:
                self.train_flat = rows.tolist()
        return sims

    def nearest32(self, emb: Sequence[float], sims: Sequence[float], k: int = 3) -> list[float]:
        """The explanation's similarities (numpy's are float32, from the float32 embedding): each
        ``sims`` rounded to float32, and those that could reach the ``k`` nearest recomputed from
        the embedding rounded to float32, so near-ties order as numpy's do."""
        out = float32(sims)
        if len(sims) <= k:
            return out
        kth = sorted(sims, reverse=True)[k - 1]
        e32 = float32(emb)
        dim, flat = self.dim, self.train_flat
        for i, s in enumerate(sims):
            if s >= kth - 1e-5:
                row = flat[i * dim : (i + 1) * dim]
                out[i] = float32([sum(map(mul, e32, row))])[0]
        return out

    def knn(self, sims: Sequence[float], k: int = 5) -> list[float]:
        """``loomc.risk.router.knn_features`` for one prompt, in numpy's order of operations."""
        labels = self.train_labels
        k = min(k, len(sims))
        order = sorted(range(len(sims)), key=lambda i: -sims[i])[:k]  # stable, as argsort's
        w = [max(sims[i], 0.0) + 1e-6 for i in order]
        wy = [wi * (1.0 if labels[i] else 0.0) for wi, i in zip(w, order, strict=True)]
        pos = max(s if y else -1.0 for s, y in zip(sims, labels, strict=True))
        neg = max(-1.0 if y else s for s, y in zip(sims, labels, strict=True))
        return [_seq_sum(wy) / _seq_sum(w), pos, neg]

    def probability(self, x: Sequence[float]) -> float:
        """Calibrated P(escalate) of one row of raw features (cut to the weights' width)."""
        width = len(self.weights)
        z = [(v - m) / s for v, m, s in zip(x[:width], self.mean, self.scale, strict=True)]
        logit = sum(map(mul, z, self.weights)) + self.bias
        t = min(max(self.platt_a * logit + self.platt_b, -40.0), 40.0)
        return 1.0 / (1.0 + math.exp(-t))


def _seq_sum(xs: Sequence[float]) -> float:
    """Left to right, as numpy sums a handful of floats (``sum`` compensates from 3.12)."""
    total = xs[0]
    for x in xs[1:]:
        total += x
    return total


class PureStatic:
    """``StaticEncoder.encode`` for one text, over the same table, as a list of floats."""

    def __init__(self, table: Path, vocab: Path) -> None:
        from loomc.risk.files import STATIC_MAX_TOKENS
        from loomc.risk.wordpiece import WordPiece, load_vocabulary

        start = time.perf_counter()
        vocabulary = load_vocabulary(vocab)
        z = read_members(table, ("scale", "meta"))
        meta = json.loads(z["meta"].texts()[0])
        if meta.get("vocab_sha256") != vocabulary.sha256:
            raise OSError(f"{table.name} was built from another vocabulary than {vocab}")
        descr, shape, self._offset = locate_member(table, "table")
        if descr != "|i1" or len(shape) != 2:
            raise OSError(f"{table.name}: the table is not int8 rows")
        self.dim = shape[1]
        self._table = table  # a prompt reads its tokens' rows only
        self._scale = z["scale"].view()
        self._tokenizer = WordPiece(vocabulary, STATIC_MAX_TOKENS)
        self.load_seconds: float | None = time.perf_counter() - start

    def token_ids(self, text: str) -> list[int]:
        ids: list[int] = self._tokenizer.encode(text)[1:-1]
        return ids or [int(self._tokenizer.unk)]

    def _rows(self, ids: list[int]) -> list[memoryview]:
        """The int8 rows of ``ids``, read from the file (one seek and read each; the file is
        opened per prompt, so no handle outlives it)."""
        out = []
        with self._table.open("rb") as fh:
            for t in ids:
                fh.seek(self._offset + t * self.dim)
                out.append(memoryview(fh.read(self.dim)).cast("b"))
        return out

    def embed(self, text: str) -> list[float]:
        """Mean of the tokens' rows times their scales (summed in token order, as numpy's
        ``mean(axis=0)``), divided by its norm."""
        ids, scale = self.token_ids(text), self._scale
        rows = self._rows(ids)
        s = scale[ids[0]]
        acc = [q * s for q in rows[0]]
        for t, row in zip(ids[1:], rows[1:], strict=True):
            s = scale[t]
            acc = [a + q * s for a, q in zip(acc, row, strict=True)]
        n = len(ids)
        vec = [a / n for a in acc]
        norm = max(math.sqrt(sum(map(mul, vec, vec))), 1e-12)
        return [v / norm for v in vec]


def float32(values: Sequence[float]) -> list[float]:
    """Each value rounded to the nearest float32 (the explanation's similarities are float32)."""
    n = len(values)
    return list(struct.unpack(f"<{n}f", struct.pack(f"<{n}f", *values)))


_LOCK = threading.Lock()
_STATIC: dict[tuple[Path, Path], PureStatic] = {}
# Weak: a profiler that moved to numpy drops its plain router, and with it ~1.4 float32 numbers
# per train embedding value, unless another profiler still serves prompts through it.
_ROUTERS: weakref.WeakValueDictionary[Path, PureRouter] = weakref.WeakValueDictionary()
_BUDGET = [PURE_PROMPTS]


def shared_pure_static(table: Path, vocab: Path) -> PureStatic:
    with _LOCK:
        enc = _STATIC.get((table, vocab))
        if enc is None:
            enc = _STATIC[(table, vocab)] = PureStatic(table, vocab)
        return enc


def shared_pure_router(path: Path) -> PureRouter:
    with _LOCK:
        router = _ROUTERS.get(path)
        if router is None:
            router = _ROUTERS[path] = PureRouter(path)
        return router


def take_budget() -> bool:
    """Whether this process may profile one more prompt in plain Python (and count it): numpy
    not imported yet, and fewer than ``PURE_PROMPTS`` profiled this way so far."""
    if "numpy" in sys.modules:
        return False
    with _LOCK:
        if _BUDGET[0] <= 0:
            return False
        _BUDGET[0] -= 1
        return True


def plain_allowed() -> bool:
    """Whether a profiler built now may serve prompts in plain Python (``take_budget`` may
    still say yes): numpy not imported, and no caller has said ``numpy_from_now``."""
    return "numpy" not in sys.modules and _BUDGET[0] > 0


def numpy_from_now() -> None:
    """This process will profile many prompts (an eval): numpy serves every one of them, so
    all the probabilities of one receipt come from one arithmetic, whatever order its runs
    start in."""
    with _LOCK:
        _BUDGET[0] = 0
