"""The semantic profiler's classifier: what goes into it and the trained weights it applies.

Shared by serving (``loomc.risk.semantic``) and training (``research/train_router.py``), so the
features a router is trained on are, by construction, the features it is served: the embedding,
what the keyword rules say about the prompt alone, the situational cues of ``loomc.risk.cues``
and nearest-neighbour evidence against the labelled train prompts. ``RouterWeights`` is one
``.npz`` file (semantic-v2 ... v6): ridge-logistic weights over standardised features,
Platt calibration, thresholds, the float16 train embeddings behind the neighbours and the
explanations, and for a cascading file the band it defers to the next one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loomc.risk.features import KNN_K as KNN_K
from loomc.risk.features import KNN_NAMES as KNN_NAMES
from loomc.risk.features import SIGNAL_NAMES as SIGNAL_NAMES
from loomc.risk.features import feature_names as feature_names
from loomc.risk.features import keyword_features as keyword_features
from loomc.risk.features import router_features as router_features

if TYPE_CHECKING:  # numpy is imported where an array is made: a single prompt needs none
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

# OpenBLAS runs a product on several threads once the train index passes ~1,100 rows (v6 has
# 1,267): for a 0.1 ms product that costs 2-4 ms of CPU and 10-25 ms of wall time on a busy
# machine (threads waking, waiting for a core). Blocks of at most this many rows stay on the
# calling thread; an index that fits in one block (v4's 650 rows) is one product, as before.
SIM_BLOCK = 1024


# float16 -> float32 by integer operations: a float16 ``s eeeee m`` (10 bits of m) read as the
# float32 bits ``0 000eeeee m<<13`` is its value times 2^-112, zeros and subnormals included, so
# a product by 2^112 (exact) restores it; the sign is or'ed back and infinities and NaNs (e = 31,
# which the product leaves at 2^16 and above) get the all-ones exponent. Bit for bit numpy's
# ``astype`` (tests/risk/test_neighbours.py checks all 65,536 floats), and faster.
_UNBIAS = 2.0**112
_HUGE = 2.0**16  # the smallest float16 with e = 31, after the product


def widened(
    rows: npt.NDArray[np.float16], out: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]:
    """``rows.astype(np.float32)``, exactly; into ``out`` (of ``rows``' shape) where given, so a
    caller widening block after block makes no array per block.

    Why: a MiniLM stage's index stays float16 (``RouterWeights.from_arrays``, memory) and is
    widened block by block for each prompt in its band; with numpy's own cast (a scalar loop on
    this machine's build) a band prompt's product over v30's 7,975 rows took ~6 ms of one core,
    with this one ~4.2 (1.42x; v27's rows 1.15x; benchmarks/README.md, half16)."""
    import numpy as np

    half = np.ascontiguousarray(rows).view(np.uint16)
    if out is None:
        out = np.empty(half.shape, dtype=np.float32)
    bits = out.view(np.uint32)
    np.bitwise_and(half, 0x7FFF, out=bits, dtype=np.uint32)
    bits <<= 13
    out *= np.float32(_UNBIAS)
    special = out >= np.float32(_HUGE)
    np.bitwise_or(bits, 0x7F800000, out=bits, where=special)
    sign = np.left_shift(half, 16, dtype=np.uint32)
    sign &= 0x80000000
    bits |= sign
    return out


def similarities(emb: npt.NDArray[Any], index: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``emb @ index.T`` (cosine similarities of unit vectors), in blocks of index rows. A
    float16 index (a MiniLM stage's, ``RouterWeights.from_arrays``) is widened to float32 one
    block at a time (``widened``): exact, so each block's product is the one a float32 index
    gives."""
    import numpy as np

    if len(index) <= SIM_BLOCK:
        return np.asarray(emb @ (widened(index) if index.dtype == np.float16 else index).T)
    if index.dtype != np.float16:
        return np.hstack(
            [emb @ index[i : i + SIM_BLOCK].T for i in range(0, len(index), SIM_BLOCK)]
        )
    scratch = np.empty((SIM_BLOCK, index.shape[1]), dtype=np.float32)  # one block's, reused
    parts = []
    for i in range(0, len(index), SIM_BLOCK):
        rows = index[i : i + SIM_BLOCK]
        parts.append(emb @ widened(rows, scratch[: len(rows)]).T)
    return np.hstack(parts)


# How far below the k-th nearest (or the nearest of a label) a row's float32 similarity may lie
# and still be re-scored in float64: for unit vectors the float32 product is within
# dim x 2^-24 x sum|a_i b_i| <= 384 x 6e-8 ~ 2.3e-5 of the float64 one (plus the query's own
# rounding, ~6e-8), so a row further below than this cannot be among the k nearest, nor the
# nearest escalating or direct prompt, whichever way the rounding went.
RESCORE_MARGIN = 1e-3


def top_order(row: npt.NDArray[Any], k: int) -> npt.NDArray[np.intp]:
    """``np.argsort(-row, kind="stable")[:k]``: the ``k`` largest, ties in row order, without
    sorting the whole row (v11's 2,352 train prompts for 3 or 5 of them).

    Only rows at or above the k-th largest value can be among the first k, and a stable sort of
    them, taken in row order, orders them as the stable sort of the whole row does. Where fewer
    than k are (a NaN among the k largest), the whole row is sorted, as before."""
    import numpy as np

    n = row.shape[0]
    k = min(k, n)
    if k == 0 or k == n:
        return np.argsort(-row, kind="stable")[:k]
    kth = -np.partition(-row, k - 1)[k - 1]
    idx = np.flatnonzero(row >= kth)
    if len(idx) < k:
        return np.argsort(-row, kind="stable")[:k]
    return idx[np.argsort(-row[idx], kind="stable")[:k]]


def neighbour_similarities(
    emb: npt.NDArray[Any],
    index32: npt.NDArray[Any],
    labels: FloatArray,
    k: int = KNN_K,
    sims32: npt.NDArray[np.float32] | None = None,
) -> FloatArray:
    """The float64 similarities ``knn_features`` reads, from a float32 index (exact: the file
    stores float16), for rows of ``emb`` (float64).

    Why not one float64 product: the index in float64 is twice the memory (v11: 7.2 MB a
    stage, of an eval's 150 MiB budget) and the product twice the time. The float32 product
    ranks every row; the few within ``RESCORE_MARGIN`` of the k-th nearest or of the nearest of
    either label are re-scored in float64, and only those reach ``knn_features``: the rest keep
    their float32 value, which lies below every similarity ``knn_features`` reads. Equal train
    rows score exactly equal, so ties go to the earlier row, as a stable sort says.
    ``sims32``: the float32 product ``similarities`` gives for these rows, where the caller
    made it already (the explanation's nearest prompts read it too): not made twice."""
    import numpy as np

    emb64 = np.asarray(emb, dtype=np.float64)
    if sims32 is None:
        sims32 = similarities(emb64.astype(np.float32), index32)
    sims = sims32.astype(np.float64)
    n = sims.shape[1]
    if n == 0:
        return sims
    kth = np.partition(sims, n - min(k, n), axis=1)[:, n - min(k, n)]
    has = labels > 0
    top_pos = np.where(has[None, :], sims, -1.0).max(axis=1)
    top_neg = np.where(has[None, :], -1.0, sims).max(axis=1)
    floor = np.minimum(kth, np.minimum(top_pos, top_neg)) - RESCORE_MARGIN
    for r in range(len(sims)):
        idx = np.flatnonzero(sims[r] >= floor[r])
        # Row by row (numpy's pairwise sum over each row), not a BLAS product: a product may
        # round two equal train rows differently by their position, and a tie between two
        # labels would then be broken by the rounding instead of by the train order.
        sims[r, idx] = (index32[idx].astype(np.float64) * emb64[r]).sum(axis=1)
    return sims


def knn_features(sims: FloatArray, labels: FloatArray, k: int = KNN_K) -> FloatArray:
    """Nearest-neighbour evidence from cosine similarities to the labelled train prompts:
    the similarity-weighted share of escalating prompts among the ``k`` nearest, and the
    similarity of the nearest escalating and of the nearest direct prompt."""
    import numpy as np

    k = min(k, sims.shape[1])
    order = np.array([top_order(row, k) for row in sims], dtype=np.intp).reshape(len(sims), k)
    top = np.take_along_axis(sims, order, axis=1)
    ys = labels[order]
    w = np.maximum(top, 0.0) + 1e-6
    pos = np.where(labels[None, :] > 0, sims, -1.0).max(axis=1)
    neg = np.where(labels[None, :] > 0, -1.0, sims).max(axis=1)
    return np.column_stack([(w * ys).sum(axis=1) / w.sum(axis=1), pos, neg])


def assemble(emb: npt.NDArray[Any], kw: FloatArray, knn: FloatArray, width: int) -> FloatArray:
    """Embedding | keyword features | cues | nearest-neighbour evidence, cut to ``width``.

    A file trained before the cues and the neighbours existed (semantic-v1) has fewer columns;
    they come last, so dropping the surplus gives exactly the features it was trained on."""
    import numpy as np

    x = np.hstack([emb.astype(np.float64), kw.reshape(len(emb), -1), knn])
    return np.ascontiguousarray(x[:, :width])


def classifier_input(
    router: RouterWeights,
    emb: npt.NDArray[Any],
    kw: FloatArray,
    extra: Callable[[int], list[list[float]]] | None = None,
    sims32: npt.NDArray[np.float32] | None = None,
) -> FloatArray:
    """A router's input for rows of embeddings and keyword features: the neighbours are the
    router's own train prompts, the width its weights'. A router wider than that (semantic-v7)
    also reads the rows ``extra(columns)`` returns (``loomc.risk.signals``: the first
    ``columns`` signal columns), computed only then and only as wide as the weights read.
    ``sims32``: ``similarities`` of ``emb`` (as float32) and ``router.train_emb``, where the
    caller made it already."""
    import numpy as np

    labels = router.labels
    knn = knn_features(neighbour_similarities(emb, router.train_emb, labels, sims32=sims32), labels)
    width = router.weights.shape[0]
    base = emb.shape[1] + kw.reshape(len(emb), -1).shape[1] + knn.shape[1]
    if extra is None or width <= base:
        return assemble(emb, kw, knn, width)
    x = np.hstack([assemble(emb, kw, knn, base), np.array(extra(width - base), dtype=np.float64)])
    return np.ascontiguousarray(x[:, :width])


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
    # float32, exact (the file stores float16): the explanation's nearest prompts read it as is,
    # the features through ``neighbour_similarities`` (float64 where it matters). A MiniLM
    # stage keeps the file's float16 (see ``from_arrays``); ``similarities`` widens it.
    train_emb: npt.NDArray[np.float32] | npt.NDArray[np.float16]
    encoder: str = "minilm"  # which embeddings it was trained on: "minilm" or "static"
    # The cascade: prompts with cascade_low < P < cascade_high go on to the file named (beside
    # this one), whose encoder is MiniLM; None when the file decides every prompt itself.
    cascade: str | None = None
    cascade_low: float = 0.0
    cascade_high: float = 0.0
    # "decide": in the band MiniLM's decision stands; "or" (a v6/v7 candidate mode): a prompt in
    # the band escalates when either stage escalates it.
    cascade_mode: str = "decide"

    @functools.cached_property
    def labels(self) -> FloatArray:
        """``train_labels`` as the float64 array the neighbour features read (read-only), made
        once per router, not once per call (~2,352 Python bools)."""
        import numpy as np

        labels = np.array(self.train_labels, dtype=np.float64)
        labels.flags.writeable = False
        return labels

    @classmethod
    def load(cls, path: Path) -> RouterWeights:
        """ValueError in one line for a file that is not a router (a damaged download, a file
        given by ``risk.options.data`` that is something else): numpy's own errors for it
        (``zipfile.BadZipFile``, a missing member) are neither ValueError nor OSError, so they
        reached the user as a traceback."""
        import zipfile

        import numpy as np

        if not zipfile.is_zipfile(path):  # numpy would read it as a pickle and refuse that
            raise ValueError(f"{path.name} is not a router file (not an .npz archive)")
        try:  # the file opened here, so that numpy failing on it cannot leave it open
            with path.open("rb") as fh, np.load(fh, allow_pickle=False) as z:
                return cls.from_arrays({name: z[name] for name in z.files})
        except (zipfile.BadZipFile, KeyError, EOFError) as exc:
            raise ValueError(f"{path.name} is not a router file ({exc})") from None

    @classmethod
    def from_arrays(cls, z: Mapping[str, Any]) -> RouterWeights:
        """A router from its arrays: a router file's members, or the trainer's output before it
        is saved (research scores folds from it without writing a file)."""
        import numpy as np

        meta = json.loads(str(z["meta"])) if "meta" in z else {}
        static = meta.get("encoder_kind") == "static"
        # Why a MiniLM stage's index stays float16: it is read only for the prompts MiniLM
        # embeds (the band's, ~20%), each already ~10 ms of encoding, so widening its blocks
        # per call (~1.7 ms for v18's 5,580 rows) is cheap there, and it keeps half the index
        # (4.3 MB for v18) out of every process; an eval's peak with MiniLM loaded went from
        # 145 (v15) to 152 MiB for v18 with both widened, over the 150. The static
        # stage reads its index for every prompt in ~0.3 ms, so it keeps the float32 copy. An
        # index given wider than float16 (research's arrays before saving) is never narrowed.
        stored = np.asarray(z["train_emb"])
        index: npt.NDArray[np.float32] | npt.NDArray[np.float16] = (
            np.ascontiguousarray(stored, dtype=np.float16)
            if not static and stored.dtype == np.float16
            else np.ascontiguousarray(stored, dtype=np.float32)
        )
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
            train_emb=index,
            encoder="static" if static else "minilm",
            cascade=meta.get("cascade") if "cascade_low" in z else None,
            cascade_low=float(z["cascade_low"]) if "cascade_low" in z else 0.0,
            cascade_high=float(z["cascade_high"]) if "cascade_high" in z else 0.0,
            cascade_mode=str(meta.get("cascade_mode", "decide")),
        )

    def sharing_rows(self, other: RouterWeights) -> RouterWeights:
        """This router with its train embeddings a view of ``other``'s first rows, where they
        are those rows exactly (same dtype and width); else this router as it is.

        Why: v27's train prompts are the first 6,595 of v30's, in both stages, so a release that
        asks v27 beside v30 (``loomc.risk.second_opinion``) holds one index, not two (10 MB for
        the static stage, 5 MB for MiniLM's), and can read v27's similarities from v30's product
        (``SecondOpinionProfiler``). A view of equal numbers changes no similarity."""
        import dataclasses

        import numpy as np

        mine, theirs = self.train_emb, other.train_emb
        n = len(mine)
        if (
            mine.dtype != theirs.dtype
            or mine.shape[1:] != theirs.shape[1:]
            or n > len(theirs)
            or not np.array_equal(mine, theirs[:n])
        ):
            return self
        return dataclasses.replace(self, train_emb=theirs[:n])

    def probability(self, x: FloatArray) -> FloatArray:
        """Calibrated P(escalate) for rows of raw features."""
        import numpy as np

        logit = ((x - self.mean) / self.scale) @ self.weights + self.bias
        z = self.platt_a * logit + self.platt_b
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0))), dtype=np.float64)
