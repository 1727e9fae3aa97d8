"""Leave-one-split-out (LOSO) cross-validation of semantic-v9's candidates (issue 17, route10).

    .venv/bin/python research/loso_router.py            # the CV table and the rule's choice

Why LOSO and not the trainer's 5-fold CV alone: the hard held-out files (hard-test,
hard-test-2, hard-test-3, hard-test-4, hard-test-5, hard-test-6) were each written as *fresh
scenarios* after the rows before them, so
holding one out whole measures what a new split by a new sitting does to a router, which a
random fold of rows written together does not (v5 won the 5-fold CV and lost on every fresh
split). Each fold trains both stages on the other eleven files with the trainer's own recipe
(``research/router_fit.py``: features, floors, regulariser, Platt calibration, thresholds and
band by inner 5-fold CV on those files), then scores the held-out file. The candidates and the
rule are pre-registered in ``evals/routing/README.md`` ("semantic-v9: the selection rule");
v6's, v7's and v8's rules are in this file's history (branches route7, route8, route9).

The seed gate is computed here too: each candidate retrained on all twelve files scores the
reference seed suite (prompts only), so the ranking can put first the candidates that would
pass the release's 24/24 check (the served profiler confirms the chosen one, with and without
hints). ``hard-test-7.jsonl`` is never read: it is not in ``FILES``.

Embeddings are computed once (float64, as the trainer does) and kept in ``--cache`` with their
prompts (``train_router.py --embeddings`` reads the same file); prompts already in ``--reuse``
(an earlier cache) are taken from it, so only new prompts pay the MiniLM pass.
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
from loomc.risk.encoders import static_embedding  # noqa: E402
from loomc.risk.evaluate import load_rows  # noqa: E402
from loomc.risk.factory import make_keywords  # noqa: E402
from loomc.risk.minilm import MiniLM  # noqa: E402
from loomc.risk.purpose import purpose_floor  # noqa: E402
from loomc.risk.router import RouterWeights, assemble, knn_features, router_features  # noqa: E402
from loomc.risk.signals import V10_WIDTH, hazard_floor, play_calm, signal_columns, situation_floor  # noqa: E402
from loomc.risk.static import StaticEncoder  # noqa: E402

CORPUS = ROOT / "evals" / "routing"
SEED = ROOT.parent / "shared" / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"
# Every file v9 may learn from, in training order. Never hard-test-7 (sealed, for the lead).
FILES = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-train-v8-extra",
    "hard-train-v9-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
    "hard-test-5",
    "hard-test-6",
)
HELD_OUT = (  # the folds
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
    "hard-test-5",
    "hard-test-6",
)
# v6: v4's features; v9: and v7's task and code columns, v8's exposure columns, the purpose columns
FEATURES = ("v6", "v9")
RULESETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "hazard-floor": ("hazard-floor",),
    "situation-floor": ("situation-floor",),
    "purpose-floor": ("purpose-floor",),
    "floors": ("hazard-floor", "situation-floor", "purpose-floor"),
    "floors+play-calm": ("hazard-floor", "situation-floor", "purpose-floor", "play-calm"),
}
# The routing cost of eval_routers.py (and of the lead's choice on the sealed split).
COST_OVER, COST_MEDIUM, COST_HIGH = 1, 2, 6
COSTS = (6.0, 12.0, 24.0)
MODES = ("static", "cascade", "cascade-or")  # the rule's order: the simpler first
DEFERS = (0.35, 0.20, 0.10)  # the cascade's cap on the share sent to MiniLM (v4-v8: 0.35)
DELTAS = np.round(np.arange(0.0, 0.3001, 0.01), 2)
Key = tuple[str, str, float, str, float]  # features, rules, cost, mode, max defer


class Cached:
    """An encoder that returns precomputed embeddings (the trainer only calls ``encode``)."""

    def __init__(self, table: Mapping[str, np.ndarray], dtype: str = "float64") -> None:
        self.table, self.dtype = table, dtype

    def encode(self, prompts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[p] for p in prompts])


def rows_of(name: str) -> list[dict[str, Any]]:
    return load_rows(CORPUS / f"{name}.jsonl")


def embeddings(
    prompts: Sequence[str], cache: Path, reuse: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """{prompt: static embedding}, {prompt: MiniLM embedding}, both float64, cached on disk;
    prompts found in ``reuse`` (an earlier cache, same encoders) are not encoded again."""
    key = hashlib.sha256("\x00".join(prompts).encode()).hexdigest()
    if cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            if str(z["key"]) == key:
                return dict(zip(prompts, z["static"], strict=True)), dict(
                    zip(prompts, z["minilm"], strict=True)
                )
    old_s: dict[str, np.ndarray] = {}
    old_m: dict[str, np.ndarray] = {}
    if reuse is not None and reuse.exists():
        with np.load(reuse, allow_pickle=False) as z:
            names = [str(p) for p in z["prompts"]]
            old_s = dict(zip(names, z["static"], strict=True))
            old_m = dict(zip(names, z["minilm"], strict=True))
    new = [p for p in prompts if p not in old_s]
    if new:
        old_s.update(zip(new, StaticEncoder().encode(new), strict=True))
        old_m.update(zip(new, MiniLM(tr.TRAIN_DTYPE).encode(new), strict=True))
    static = np.stack([old_s[p] for p in prompts])
    minilm = np.stack([old_m[p] for p in prompts])
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
    calm: np.ndarray  # a play-calm rule would not
    situation: np.ndarray  # a situation-floor rule would escalate
    purpose: np.ndarray  # a purpose-floor rule would escalate
    rules: tuple[str, ...] = ()
    people: np.ndarray | None = None  # a people-floor-wide rule would escalate (route27 on)

    def deferred(self) -> float:
        """The share of the file's prompts the cascade sends to MiniLM (0 for a static stage)."""
        if self.mode == "static":
            return 0.0
        p = self.first.prob
        return float(np.mean((p > self.low) & (p < self.high_edge)))

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
        if "situation-floor" in self.rules:
            esc = esc | self.situation
        if "purpose-floor" in self.rules:
            esc = esc | self.purpose
        if "people-floor-wide" in self.rules:
            assert self.people is not None, "people-floor-wide needs the people flags"
            esc = esc | self.people
        if "play-calm" in self.rules:
            esc = esc & ~self.calm
        return esc

    def figures(self, delta: float) -> dict[str, float]:
        esc = self.escalate(delta)
        y = self.y
        high_missed = int(np.sum(~esc & y & self.high))
        med_missed = int(np.sum(~esc & y & ~self.high))
        over = int(np.sum(esc & ~y))
        return {
            "acc": float(np.mean(esc == y)),
            "high_missed": high_missed,
            "med_missed": med_missed,
            "over": over,
            "cost": COST_OVER * over + COST_MEDIUM * med_missed + COST_HIGH * high_missed,
            "n": len(y),
            "deferred": self.deferred(),
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
    extra = np.array(
        [signal_columns(p, V10_WIDTH, static_embedding) for p in prompts], dtype=np.float64
    )
    hazard = np.array([bool(hazard_floor(p)) for p in prompts])
    quiet = np.array([play_calm(p) for p in prompts])
    situation = np.array([bool(situation_floor(p)) for p in prompts])
    purpose = np.array([bool(purpose_floor(p)) for p in prompts])
    emb1 = np.stack([static[p] for p in prompts])
    emb2 = np.stack([minilm[p] for p in prompts])
    y, high, kw_high, floor = tr.row_flags(held_rows, keywords)
    out: dict[Key, Scored] = {}
    for features in FEATURES:
        signals = False if features == "v6" else features
        base1 = tr.train(train_rows, Cached(static), verbose=False, signals=signals)  # type: ignore[arg-type]
        base2 = tr.train(train_rows, Cached(minilm), verbose=False, signals=signals)  # type: ignore[arg-type]
        p1 = served_probability(base1, emb1, kw, extra)
        p2 = served_probability(base2, emb2, kw, extra)
        for cost in COSTS:
            a1 = thresholds_at(base1, train_rows, keywords, cost)
            a2 = thresholds_at(base2, train_rows, keywords, cost)
            for mode, cap in [("static", 0.0)] + [(m, d) for m in MODES[1:] for d in DEFERS]:
                lo, hi = 0.0, 0.0
                if mode != "static":
                    band_mode = "or" if mode == "cascade-or" else "decide"
                    lo, hi, _, _ = tr.choose_band(
                        a1, a2, train_rows, keywords, cost_high=cost, mode=band_mode, max_defer=cap
                    )
                for rules_name, rules in RULESETS.items():
                    out[(features, rules_name, cost, mode, cap)] = Scored(
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
                        situation,
                        purpose,
                        rules,
                    )
    return out


def name_of(key: Key, delta: float | None = None) -> str:
    features, rules, cost, mode, cap = key
    band = f" (defer <= {cap:.2f})" if mode != "static" else ""
    tail = "" if delta is None else f", delta {delta:.2f}"
    return f"{features}, {rules}, {mode}{band}, cost {cost:g}{tail}"


def rank(
    folds: Mapping[str, Mapping[Key, Scored]], seed: Mapping[Key, Scored] | None = None
) -> list[tuple[Any, str, list[Any]]]:
    """Every candidate at every ``delta``, best first by the pre-registered rule: those whose
    all-files retrain routes the seed suite 24/24 (``seed``; prompts only) first, then the lowest
    routing cost summed over the folds, the fewest high missed, the smaller share deferred to
    MiniLM (mean over the folds), the most folds meeting the goal (0 high missed and >= 90%),
    the highest mean accuracy, then the simpler (features v6, v9; rules in ``RULESETS``
    order; static, cascade, cascade-or; the higher cap on deferral; lower cost; smaller delta)."""
    keyed = []
    for key in folds[HELD_OUT[0]]:
        features, rules, cost, mode, cap = key
        simple = (
            FEATURES.index(features),
            list(RULESETS).index(rules),
            MODES.index(mode),
            -cap,
            cost,
        )
        for d in DELTAS:
            figs = [folds[h][key].figures(float(d)) for h in HELD_OUT]
            met = sum(f["high_missed"] == 0 and f["acc"] >= 0.9 for f in figs)
            cost_sum = sum(int(f["cost"]) for f in figs)
            missed = sum(int(f["high_missed"]) for f in figs)
            mean = float(np.mean([f["acc"] for f in figs]))
            share = round(float(np.mean([f["deferred"] for f in figs])), 6)
            seed_fail = 0 if seed is None else int(seed[key].figures(float(d))["acc"] < 1.0)
            order = (seed_fail, cost_sum, missed, share, -met, -round(mean, 9), *simple, float(d))
            keyed.append((order, name_of(key, float(d)), figs))
    keyed.sort(key=lambda k: k[0])
    return keyed


def cell(f: Mapping[str, float]) -> str:
    return (
        f"{100 * f['acc']:.1f}%, {f['high_missed']} high, {f['med_missed']} med, "
        f"{f['over']} over, cost {f['cost']}"
    )


def seed_rows() -> list[dict[str, Any]]:
    """The reference seed suite, as the lead's check reads it (prompts only here)."""
    return load_rows(SEED)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/loomc-loso-embeddings.npz"))
    ap.add_argument("--reuse", type=Path, help="an earlier cache whose embeddings are reused")
    ap.add_argument("--top", type=int, default=15, help="rows of the ranking to print")
    ap.add_argument(
        "--table", action="store_true", help="print the delta-0 table of every candidate"
    )
    args = ap.parse_args(argv)
    by_file = {name: rows_of(name) for name in FILES}
    seed = seed_rows()
    prompts = [str(r["prompt"]) for rows in by_file.values() for r in rows]
    prompts = list(dict.fromkeys(prompts + [str(r["prompt"]) for r in seed]))
    static, minilm = embeddings(prompts, args.cache, args.reuse)
    folds: dict[str, dict[Key, Scored]] = {}
    for held in HELD_OUT:
        train_rows = [r for name in FILES if name != held for r in by_file[name]]
        folds[held] = run_fold(train_rows, by_file[held], static, minilm)
        print(f"fold {held}: trained on {len(train_rows)} rows", file=sys.stderr, flush=True)
    all_rows = [r for name in FILES for r in by_file[name]]
    seeded = run_fold(all_rows, seed, static, minilm)
    print(f"seed gate: trained on {len(all_rows)} rows", file=sys.stderr, flush=True)
    if args.table:
        head = "| candidate | " + " | ".join(HELD_OUT) + " | mean | high missed | cost | seed |"
        print("At delta 0 (the trainer's own thresholds):\n\n" + head)
        print("|---|" + "---|" * len(HELD_OUT) + "---:|---:|---:|---:|")
        for key in folds[HELD_OUT[0]]:
            figs = [folds[h][key].figures(0.0) for h in HELD_OUT]
            mean = 100 * float(np.mean([f["acc"] for f in figs]))
            missed = sum(int(f["high_missed"]) for f in figs)
            cost_sum = sum(int(f["cost"]) for f in figs)
            s24 = round(24 * seeded[key].figures(0.0)["acc"])
            print(
                f"| {name_of(key)} | "
                + " | ".join(cell(f) for f in figs)
                + f" | {mean:.1f}% | {missed} | {cost_sum} | {s24}/24 |"
            )
    keyed = rank(folds, seeded)
    print(f"\nThe rule over every delta (best {args.top}):\n")
    print(
        "| candidate | seed 24/24 | routing cost | high missed | deferred | folds met | mean | "
        + " | ".join(HELD_OUT)
        + " |"
    )
    print("|---|---|---:|---:|---:|---:|---:|" + "---|" * len(HELD_OUT))
    for order, name, figs in keyed[: args.top]:
        print(
            f"| {name} | {'no' if order[0] else 'yes'} | {order[1]} | {order[2]} | "
            f"{100 * order[3]:.1f}% | {-order[4]} | {100 * -order[5]:.1f}% | "
            + " | ".join(cell(f) for f in figs)
            + " |"
        )
    print(f"\nchosen by the pre-registered rule: {keyed[0][1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
