"""Leave-one-split-out (LOSO) cross-validation of semantic-v7's candidates (issue 17, route8).

    .venv/bin/python research/loso_router.py            # the CV table and the rule's choice

Why LOSO and not the trainer's 5-fold CV alone: the hard held-out files (hard-test,
hard-test-2, hard-test-3) were each written as *fresh scenarios* after the rows before them, so
holding one out whole measures what a new split by a new sitting does to a router, which a
random fold of rows written together does not (v5 won the 5-fold CV and lost on every fresh
split). Each fold trains both stages on the other seven files with the trainer's own recipe
(``research/router_fit.py``: features, floors, regulariser, Platt calibration, thresholds and
band by inner 5-fold CV on those seven files), then scores the held-out file. The candidates and
the rule are pre-registered in ``evals/routing/README.md`` ("semantic-v7: the selection rule");
v6's three-fold rule and its amendment are in this file's history (branch route7).

``hard-test-5.jsonl`` is never read: it is not in ``FILES``.

Embeddings are computed once (float64, as the trainer does) and kept in ``--cache`` with their
prompts (``train_router.py --embeddings`` reads the same file); the MiniLM pass over 1,387
prompts takes minutes on one core.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

import train_router as tr  # noqa: E402
from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.evaluate import load_rows  # noqa: E402
from loomc.risk.factory import make_keywords  # noqa: E402
from loomc.risk.minilm import MiniLM  # noqa: E402
from loomc.risk.router import RouterWeights, assemble, knn_features, router_features  # noqa: E402
from loomc.risk.signals import calm, hazard_floor, signal_vector  # noqa: E402
from loomc.risk.static import StaticEncoder  # noqa: E402

CORPUS = ROOT / "evals" / "routing"
# Every file v7 may learn from, in training order. Never hard-test-5 (sealed, for the lead).
FILES = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
)
HELD_OUT = ("hard-test", "hard-test-2", "hard-test-3", "hard-test-4")  # the LOSO folds
WEIGHT = {"hard-test-4": 2}  # goal points: the only fold written outside the project
FEATURES = ("v6", "v7")  # v7: loomc.risk.signals' columns too
RULESETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "hazard-floor": ("hazard-floor",),
    "calm": ("calm",),
    "both": ("hazard-floor", "calm"),
}
COSTS = (6.0, 12.0, 24.0)
MODES = ("static", "cascade", "cascade-or")  # the rule's order: the simpler first
DELTAS = np.round(np.arange(0.0, 0.3001, 0.01), 2)
Key = tuple[str, str, float, str]  # features, rules, cost, mode


class Cached:
    """An encoder that returns precomputed embeddings (the trainer only calls ``encode``)."""

    def __init__(self, table: Mapping[str, np.ndarray], dtype: str = "float64") -> None:
        self.table, self.dtype = table, dtype

    def encode(self, prompts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[p] for p in prompts])


def rows_of(name: str) -> list[dict[str, Any]]:
    return load_rows(CORPUS / f"{name}.jsonl")


def embeddings(prompts: Sequence[str], cache: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """{prompt: static embedding}, {prompt: MiniLM embedding}, both float64, cached on disk."""
    key = hashlib.sha256("\x00".join(prompts).encode()).hexdigest()
    if cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            if str(z["key"]) == key:
                return dict(zip(prompts, z["static"], strict=True)), dict(
                    zip(prompts, z["minilm"], strict=True)
                )
    static = StaticEncoder().encode(prompts)
    minilm = MiniLM(tr.TRAIN_DTYPE).encode(prompts)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        cache, key=np.array(key), prompts=np.array(list(prompts)), static=static, minilm=minilm
    )
    return dict(zip(prompts, static, strict=True)), dict(zip(prompts, minilm, strict=True))


def served_probability(
    arrays: Mapping[str, np.ndarray], emb: np.ndarray, kw: np.ndarray, extra: np.ndarray
) -> np.ndarray:
    """P(escalate) as ``SemanticProfiler`` computes it for prompts outside the train rows
    (``extra``: v7's columns, read only by a router whose weights are that wide)."""
    router = RouterWeights.from_arrays(arrays)
    sims = emb.astype(np.float64) @ router.train_emb.astype(np.float64).T
    knn = knn_features(sims, np.array(router.train_labels, dtype=np.float64))
    x = np.hstack([assemble(emb, kw, knn, emb.shape[1] + kw.shape[1] + knn.shape[1]), extra])
    return router.probability(np.ascontiguousarray(x[:, : router.weights.shape[0]]))


@dataclass
class Stage:
    prob: np.ndarray
    t: float
    ts: float


@dataclass
class Scored:
    """What a held-out file needs to be decided at any threshold shift."""

    y: np.ndarray
    high: np.ndarray
    kw_high: np.ndarray
    floor: np.ndarray
    first: Stage
    second: Stage
    low: float
    high_edge: float
    mode: str
    hazard: np.ndarray  # a hazard-floor rule would escalate
    calm: np.ndarray  # a calm rule would not
    rules: tuple[str, ...] = ()

    def escalate(self, delta: float) -> np.ndarray:
        def dec(s: Stage) -> np.ndarray:
            return tr.decide(
                s.prob, self.kw_high, max(s.t - delta, 0.0), max(s.ts - delta, 0.0), self.floor
            )

        esc = dec(self.first)
        if self.mode != "static":
            e2 = dec(self.second)
            band = (self.first.prob > self.low) & (self.first.prob < self.high_edge)
            esc = np.where(band, (esc | e2) if self.mode == "cascade-or" else e2, esc)
        if "hazard-floor" in self.rules:
            esc = esc | self.hazard
        if "calm" in self.rules:
            esc = esc & ~self.calm
        return esc

    def figures(self, delta: float) -> dict[str, float]:
        esc = self.escalate(delta)
        y = self.y
        return {
            "acc": float(np.mean(esc == y)),
            "high_missed": int(np.sum(~esc & y & self.high)),
            "med_missed": int(np.sum(~esc & y & ~self.high)),
            "over": int(np.sum(esc & ~y)),
            "n": len(y),
        }


def thresholds_at(arrays: Mapping[str, np.ndarray], rows: Any, keywords: Any, cost: float) -> Any:
    """The trainer's arrays with thresholds re-chosen for ``cost`` (they are the only part of
    ``train`` that depends on it)."""
    y, high, kw_high, floor = tr.row_flags(rows, keywords)
    t, ts, _ = tr.choose_thresholds(arrays["cv_prob"], y.astype(float), high, kw_high, floor, cost)
    out = dict(arrays)
    out["threshold"], out["signal_threshold"] = np.float64(t), np.float64(ts)
    out["medium_threshold"] = np.float64(round(t / 2, 2))
    return out


def run_fold(
    train_rows: list[dict[str, Any]],
    held_rows: list[dict[str, Any]],
    static: Mapping[str, np.ndarray],
    minilm: Mapping[str, np.ndarray],
) -> dict[Key, Scored]:
    keywords = make_keywords(RiskSettings())
    prompts = [str(r["prompt"]) for r in held_rows]
    kw = np.array([router_features(keywords, p) for p in prompts], dtype=np.float64)
    extra = np.array([signal_vector(p) for p in prompts], dtype=np.float64)
    hazard = np.array([bool(hazard_floor(p)) for p in prompts])
    quiet = np.array([calm(p) for p in prompts])
    emb1 = np.stack([static[p] for p in prompts])
    emb2 = np.stack([minilm[p] for p in prompts])
    y, high, kw_high, floor = tr.row_flags(held_rows, keywords)
    out: dict[Key, Scored] = {}
    for features in FEATURES:
        signals = features == "v7"
        base1 = tr.train(train_rows, Cached(static), verbose=False, signals=signals)  # type: ignore[arg-type]
        base2 = tr.train(train_rows, Cached(minilm), verbose=False, signals=signals)  # type: ignore[arg-type]
        p1 = served_probability(base1, emb1, kw, extra)
        p2 = served_probability(base2, emb2, kw, extra)
        for cost in COSTS:
            a1 = thresholds_at(base1, train_rows, keywords, cost)
            a2 = thresholds_at(base2, train_rows, keywords, cost)
            for mode in MODES:
                lo, hi = 0.0, 0.0
                if mode != "static":
                    band_mode = "or" if mode == "cascade-or" else "decide"
                    lo, hi, _, _ = tr.choose_band(
                        a1, a2, train_rows, keywords, cost_high=cost, mode=band_mode
                    )
                for rules_name, rules in RULESETS.items():
                    out[(features, rules_name, cost, mode)] = Scored(
                        y,
                        high,
                        kw_high,
                        floor,
                        Stage(p1, float(a1["threshold"]), float(a1["signal_threshold"])),
                        Stage(p2, float(a2["threshold"]), float(a2["signal_threshold"])),
                        lo,
                        hi,
                        mode,
                        hazard,
                        quiet,
                        rules,
                    )
    return out


def rank(folds: Mapping[str, Mapping[Key, Scored]]) -> list[tuple[Any, str, list[Any]]]:
    """Every candidate at every ``delta``, best first by the pre-registered rule: goal points
    (a fold with 0 high missed and >= 90%; hard-test-4 counts 2), fewest high missed, highest
    mean accuracy, then the simpler (v6 features, fewer rules, static, lower cost, smaller delta)."""
    keyed = []
    for key in folds[HELD_OUT[0]]:
        features, rules, cost, mode = key
        simple = (FEATURES.index(features), list(RULESETS).index(rules), MODES.index(mode), cost)
        for d in DELTAS:
            figs = [folds[h][key].figures(float(d)) for h in HELD_OUT]
            points = sum(
                WEIGHT.get(h, 1)
                for h, f in zip(HELD_OUT, figs, strict=True)
                if f["high_missed"] == 0 and f["acc"] >= 0.9
            )
            missed = sum(int(f["high_missed"]) for f in figs)
            mean = float(np.mean([f["acc"] for f in figs]))
            order = (-points, missed, -round(mean, 9), *simple, float(d))
            name = f"{features}, {rules}, {mode}, cost {cost:g}, delta {float(d):.2f}"
            keyed.append((order, name, figs))
    keyed.sort(key=lambda k: k[0])
    return keyed


def cell(f: Mapping[str, float]) -> str:
    return f"{100 * f['acc']:.1f}%, {f['high_missed']} high, {f['over']} over"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/loomc-loso-embeddings.npz"))
    ap.add_argument("--top", type=int, default=15, help="rows of the ranking to print")
    args = ap.parse_args(argv)
    by_file = {name: rows_of(name) for name in FILES}
    prompts = list(dict.fromkeys(str(r["prompt"]) for rows in by_file.values() for r in rows))
    static, minilm = embeddings(prompts, args.cache)
    folds: dict[str, dict[Key, Scored]] = {}
    for held in HELD_OUT:
        train_rows = [r for name in FILES if name != held for r in by_file[name]]
        folds[held] = run_fold(train_rows, by_file[held], static, minilm)
        print(f"fold {held}: trained on {len(train_rows)} rows", file=sys.stderr, flush=True)
    head = "| candidate | " + " | ".join(HELD_OUT) + " | mean | high missed |"
    print("At delta 0 (the trainer's own thresholds):\n\n" + head)
    print("|---|" + "---|" * len(HELD_OUT) + "---:|---:|")
    for key in folds[HELD_OUT[0]]:
        figs = [folds[h][key].figures(0.0) for h in HELD_OUT]
        mean = 100 * float(np.mean([f["acc"] for f in figs]))
        missed = sum(int(f["high_missed"]) for f in figs)
        name = f"{key[0]}, {key[1]}, {key[3]}, cost {key[2]:g}"
        print(f"| {name} | " + " | ".join(cell(f) for f in figs) + f" | {mean:.1f}% | {missed} |")
    keyed = rank(folds)
    print(f"\nThe rule over every delta (best {args.top}):\n")
    print("| candidate | goal points | high missed | mean | " + " | ".join(HELD_OUT) + " |")
    print("|---|---:|---:|---:|" + "---|" * len(HELD_OUT))
    for order, name, figs in keyed[: args.top]:
        print(
            f"| {name} | {-order[0]} | {order[1]} | {100 * -order[2]:.1f}% | "
            + " | ".join(cell(f) for f in figs)
            + " |"
        )
    print(f"\nchosen by the pre-registered rule: {keyed[0][1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
