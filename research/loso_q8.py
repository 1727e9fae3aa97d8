"""semantic-v10 beside v8: v8's recipe on the defined int8 MiniLM, leave one split out (branch q8).

    .venv/bin/python research/loso_q8.py [--cache /tmp/q8-embeddings.npz] [--reuse OLD.npz]

Why: v10 changes one thing against v8, the embeddings of its MiniLM stage (``loomc.risk.
minilm_q8``'s numpy reference instead of ``MiniLM("float64")``), so the honest estimate of
what that costs is both recipes in one run over the same folds: each spent hard split
(hard-test ... hard-test-7) held out in turn, both stages trained on the other files with
v8's flags (v4's features, cost 6, the cascade deciding its band with at most 35 % deferred,
``situation-floor``, thresholds lowered by 0.02), the held-out file scored as the profiler
serves it (``loso_router.Scored``).

The embeddings of every corpus prompt (``evals/routing``'s files named below and the seed
suite) are computed once and cached with their prompts: ``static`` and ``minilm`` (float64, as
``loso_router.py``'s cache, which ``--reuse`` may name) and ``minilm-q8`` (the reference). The
cache is what ``train_router.py --embeddings`` reads to write the shipped files. With
``hard-train-v10-extra.jsonl`` present (branch data11) its rows join every fold's training.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

import loso_router as lr  # noqa: E402
import train_router as tr  # noqa: E402
from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.factory import make_keywords  # noqa: E402
from loomc.risk.router import router_features  # noqa: E402
from loomc.risk.signals import signal_vector, situation_floor  # noqa: E402

# v8's ten training files, then the two spent splits after it; the v10 extra rows if present.
V8_FILES = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-train-v8-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
    "hard-test-5",
)
EXTRA = "hard-train-v10-extra"
HELD_OUT = tuple(f"hard-test{s}" for s in ("", "-2", "-3", "-4", "-5", "-6", "-7"))
COST, CAP, DELTA, RULES = 6.0, 0.35, 0.02, ("situation-floor",)
ARMS = {"v8 (MiniLM float64)": "minilm", "v10 (MiniLM q8)": "minilm-q8"}


def files() -> tuple[str, ...]:
    """Every file a fold may learn from: v8's, the later spent splits, the extra rows if any."""
    names = (*V8_FILES, "hard-test-6", "hard-test-7")
    if (lr.CORPUS / f"{EXTRA}.jsonl").exists():
        names = (*names[:5], EXTRA, *names[5:])
    return names


def q8_embeddings(prompts: Sequence[str], cache: Path, reuse: Path | None) -> dict[str, Any]:
    """{kind: {prompt: embedding}} for static, minilm and minilm-q8, cached in ``cache``."""
    static, minilm = lr.embeddings(prompts, cache.with_suffix(".float.npz"), reuse)
    q8: dict[str, np.ndarray] = {}
    if cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            q8 = dict(zip([str(p) for p in z["prompts"]], z["minilm-q8"], strict=True))
    new = [p for p in prompts if p not in q8]
    if new:
        from loomc.risk.minilm_q8 import MiniLMQ8

        q8.update(zip(new, MiniLMQ8().encode(new), strict=True))
        rows = list(q8)
        np.savez(
            cache,
            prompts=np.array(rows),
            static=np.stack([static.get(p, np.zeros(384)) for p in rows]),
            minilm=np.stack([minilm.get(p, np.zeros(384)) for p in rows]),
            **{"minilm-q8": np.stack([q8[p] for p in rows])},
        )
    return {"static": static, "minilm": minilm, "minilm-q8": q8}


def fold(
    train_rows: list[dict[str, Any]],
    held_rows: list[dict[str, Any]],
    static: Mapping[str, np.ndarray],
    second: Mapping[str, np.ndarray],
) -> lr.Scored:
    """v8's recipe trained on ``train_rows`` with ``second`` as the MiniLM stage's embeddings,
    ready to score ``held_rows`` as served."""
    keywords = make_keywords(RiskSettings())
    prompts = [str(r["prompt"]) for r in held_rows]
    kw = np.array([router_features(keywords, p) for p in prompts], dtype=np.float64)
    extra = np.array([signal_vector(p) for p in prompts], dtype=np.float64)
    base1 = tr.train(train_rows, lr.Cached(static), verbose=False, signals=False)  # type: ignore[arg-type]
    base2 = tr.train(train_rows, lr.Cached(second), verbose=False, signals=False)  # type: ignore[arg-type]
    p1 = lr.served_probability(base1, np.stack([static[p] for p in prompts]), kw, extra)
    p2 = lr.served_probability(base2, np.stack([second[p] for p in prompts]), kw, extra)
    a1 = lr.thresholds_at(base1, train_rows, keywords, COST)
    a2 = lr.thresholds_at(base2, train_rows, keywords, COST)
    lo, hi, _, _ = tr.choose_band(
        a1, a2, train_rows, keywords, cost_high=COST, mode="decide", max_defer=CAP
    )
    y, high, kw_high, floor = tr.row_flags(held_rows, keywords)
    none = np.zeros(len(prompts), dtype=bool)
    situation = np.array([bool(situation_floor(p)) for p in prompts])
    return lr.Scored(
        y,
        high,
        kw_high,
        floor,
        lr.Stage(p1, float(a1["threshold"]), float(a1["signal_threshold"])),
        lr.Stage(p2, float(a2["threshold"]), float(a2["signal_threshold"])),
        lo,
        hi,
        "cascade",
        none,
        none,
        situation,
        none,
        RULES,
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/q8-embeddings.npz"))
    ap.add_argument("--reuse", type=Path, help="an earlier loso_router.py cache")
    ap.add_argument("--embed-only", action="store_true", help="fill the cache and stop")
    args = ap.parse_args(argv)
    names = files()
    by_file = {name: lr.rows_of(name) for name in names}
    seed = lr.seed_rows()
    prompts = [str(r["prompt"]) for rows in by_file.values() for r in rows]
    prompts += [str(r["prompt"]) for r in seed]
    prompts += [
        str(r["prompt"]) for p in sorted(lr.CORPUS.glob("*.jsonl")) for r in tr.load_rows(p)
    ]
    prompts = list(dict.fromkeys(prompts))
    emb = q8_embeddings(prompts, args.cache, args.reuse)
    print(f"{len(prompts)} prompts embedded; files: {', '.join(names)}", file=sys.stderr)
    if args.embed_only:
        return 0
    print("| recipe | " + " | ".join(HELD_OUT) + " | mean | high missed | over | cost | deferred |")
    print("|---|" + "---|" * len(HELD_OUT) + "---:|---:|---:|---:|---:|")
    for arm, kind in ARMS.items():
        figs = []
        for held in HELD_OUT:
            train_rows = [r for n in names if n != held for r in by_file[n]]
            scored = fold(train_rows, by_file[held], emb["static"], emb[kind])
            figs.append(scored.figures(DELTA))
        mean = 100 * float(np.mean([f["acc"] for f in figs]))
        print(
            f"| {arm} | "
            + " | ".join(lr.cell(f) for f in figs)
            + f" | {mean:.1f}% | {sum(int(f['high_missed']) for f in figs)} | "
            f"{sum(int(f['over']) for f in figs)} | {sum(int(f['cost']) for f in figs)} | "
            f"{100 * float(np.mean([f['deferred'] for f in figs])):.1f}% |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
