"""The router's neighbour evidence from a float32 index (``neighbour_similarities``) equals what
a float64 product over the same (float16-exact) index gives: the re-scored rows are the only
ones ``knn_features`` reads, ties and near-ties included."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from loomc.risk.router import SIM_BLOCK, knn_features, neighbour_similarities, similarities


def unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    dim=st.sampled_from([8, 64, 384]),
    queries=st.integers(1, 4),
    near=st.booleans(),
    k=st.integers(1, 7),
)
# equal train rows with different labels at the k-th place (a BLAS product broke the tie by
# the rows' positions: found in CI)
@example(seed=0, n=30, dim=8, queries=4, near=True, k=5)
def test_same_evidence_as_the_float64_product(
    seed: int, n: int, dim: int, queries: int, near: bool, k: int
) -> None:
    rng = np.random.default_rng(seed)
    index = unit(rng.standard_normal((n, dim))).astype(np.float16).astype(np.float32)
    emb = unit(rng.standard_normal((queries, dim)))
    if near:  # queries a hair from train rows, and train rows a hair from each other: near-ties
        emb = unit(index[rng.integers(0, n, queries)].astype(np.float64) + 1e-7)
        dup = rng.integers(0, n, max(1, n // 3))
        index[dup] = index[rng.integers(0, n, len(dup))]
    labels = rng.integers(0, 2, n).astype(np.float64)
    # the float64 similarities, each a sum over one row (equal rows tie exactly)
    full = (emb[:, None, :] * index.astype(np.float64)[None, :, :]).sum(axis=2)
    got = knn_features(neighbour_similarities(emb, index, labels, k), labels, k)
    want = knn_features(full, labels, k)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_far_rows_are_not_rescored_but_ranked_below() -> None:
    """A row far below the k nearest keeps its float32 value; the ones read are float64."""
    index = np.eye(4, dtype=np.float32)
    emb = np.array([[0.8, 0.6, 0.0, 0.0]])
    labels = np.array([1.0, 0.0, 1.0, 0.0])
    sims = neighbour_similarities(emb, index, labels, k=2)
    assert sims[0, 0] == 0.8 and sims[0, 1] == 0.6  # re-scored in float64: exact decimals
    assert sims.dtype == np.float64
    np.testing.assert_allclose(
        knn_features(sims, labels, 2), knn_features(emb @ index.T, labels, 2)
    )


def test_an_empty_index_gives_an_empty_row() -> None:
    sims = neighbour_similarities(np.ones((1, 3)), np.zeros((0, 3), np.float32), np.zeros(0))
    assert sims.shape == (1, 0)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.sampled_from([1, 7, SIM_BLOCK - 1, SIM_BLOCK, SIM_BLOCK + 1, 2 * SIM_BLOCK + 300]),
    queries=st.integers(1, 3),
    k=st.integers(1, 7),
)
def test_a_float16_index_gives_exactly_the_float32_evidence(
    seed: int, n: int, queries: int, k: int
) -> None:
    """A MiniLM stage keeps its index as the file's float16 (an eval's memory) and
    ``similarities`` widens it a block at a time: every similarity and feature is bit for bit
    what the widened (float32) index gives, whatever the number of blocks."""
    rng = np.random.default_rng(seed)
    index16 = unit(rng.standard_normal((n, 384))).astype(np.float16)
    index32 = index16.astype(np.float32)
    emb = unit(rng.standard_normal((queries, 384)))
    labels = rng.integers(0, 2, n).astype(np.float64)
    e32 = emb.astype(np.float32)
    assert np.array_equal(similarities(e32, index16), similarities(e32, index32))
    got = knn_features(neighbour_similarities(emb, index16, labels, k), labels, k)
    want = knn_features(neighbour_similarities(emb, index32, labels, k), labels, k)
    assert np.array_equal(got, want)


def test_a_minilm_stage_keeps_its_index_as_float16_and_a_static_one_widens_it() -> None:
    """Which stage keeps which (``RouterWeights.from_arrays``): the MiniLM stage is read only
    for the band's prompts; the static stage for every prompt, in ~0.3 ms it keeps. An index
    handed over wider than float16 (research's arrays before a file is written) stays exact."""
    from loomc.risk.releases import RELEASES
    from loomc.risk.router import RouterWeights

    static = RouterWeights.load(RELEASES["v18"])
    second = RouterWeights.load(RELEASES["v18"].with_name("router-minilm-v18.npz"))
    assert static.encoder == "static" and static.train_emb.dtype == np.float32
    assert second.encoder == "minilm" and second.train_emb.dtype == np.float16
    with np.load(RELEASES["v18"].with_name("router-minilm-v18.npz")) as z:
        arrays = {name: z[name] for name in z.files}
    wide = arrays["train_emb"].astype(np.float64) + 1e-6  # not representable in float16
    kept = RouterWeights.from_arrays(arrays | {"train_emb": wide}).train_emb
    assert kept.dtype == np.float32 and np.array_equal(kept, wide.astype(np.float32))


def test_widened_is_numpys_cast_for_every_float16() -> None:
    """All 65,536 float16 bit patterns (zeros, subnormals, infinities and NaNs included), as a
    row and as a block, widen to the float32 bits numpy's ``astype`` gives."""
    from loomc.risk.router import widened

    every = np.arange(2**16, dtype=np.uint16).view(np.float16)
    want = every.astype(np.float32).view(np.uint32)
    assert np.array_equal(widened(every).view(np.uint32), want)
    block = every.reshape(256, 256)[10:20]  # a block of rows, as ``similarities`` passes it
    assert np.array_equal(widened(block).view(np.uint32), block.astype(np.float32).view(np.uint32))
    assert widened(block).shape == (10, 256) and widened(block).dtype == np.float32
