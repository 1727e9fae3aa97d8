"""A MiniLM stage's float16 index widened for one prompt's product: numpy's cast against
``loomc.risk.router.widened`` (integer operations), interleaved in one process.

    python benchmarks/bench_widen.py [--releases v27 v30] [--rounds 5] [--reps 20]

Why: a MiniLM stage keeps its train embeddings float16 (memory: ``RouterWeights.from_arrays``)
and ``similarities`` widens them block by block for every prompt in the cascade's band. Each
round times ``--reps`` products of each kind, the two alternating call by call so machine load
hits both alike, with the index evicted from the cache before each call as a profile's other work
evicts it (a 32 MB buffer read). Reported per release: min / median / max over rounds of the
per-round median milliseconds of each, and the ratio. Both give the same bits (checked here on
every row, and in tests/risk/test_neighbours.py over all 65,536 float16s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.risk.releases import RELEASES  # noqa: E402
from loomc.risk.router import SIM_BLOCK, RouterWeights, similarities  # noqa: E402


def product(emb: np.ndarray, index: np.ndarray, widen: bool) -> np.ndarray:
    """``similarities`` as served (``widened`` into one reused block), or as it was: each
    block widened by numpy's cast."""
    if widen:
        return similarities(emb, index)
    return np.hstack(
        [
            emb @ index[i : i + SIM_BLOCK].astype(np.float32).T
            for i in range(0, len(index), SIM_BLOCK)
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", nargs="+", default=["v27", "v30"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    evict = np.ones(32 * 1024 * 1024 // 8)
    rng = np.random.default_rng(0)
    print("| release | rows | numpy cast ms (min / median / max) | widened ms | ratio (median) |")
    print("|---|---:|---:|---:|---:|")
    for release in args.releases:
        second = RELEASES[release].with_name(f"router-minilm-{release}.npz")
        index = RouterWeights.load(second).train_emb
        assert index.dtype == np.float16
        emb = rng.standard_normal((1, index.shape[1])).astype(np.float32)
        assert np.array_equal(product(emb, index, True), product(emb, index, False))
        cast, ours = [], []
        for _ in range(args.rounds):
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.reps):
                for widen in (False, True):
                    evict.sum()
                    start = time.perf_counter()
                    product(emb, index, widen)
                    times[widen].append((time.perf_counter() - start) * 1000)
            cast.append(statistics.median(times[False]))
            ours.append(statistics.median(times[True]))
        ratio = statistics.median(cast) / statistics.median(ours)
        print(
            f"| {release} | {len(index)} | {min(cast):.2f} / {statistics.median(cast):.2f} / "
            f"{max(cast):.2f} | {min(ours):.2f} / {statistics.median(ours):.2f} / {max(ours):.2f} "
            f"| {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
