"""Fitting and cross-validation of the semantic profiler's classifiers (``train_router.py``'s
core, shared with ``loso_router.py``): the features of a corpus, the ridge-logistic fit, Platt
calibration, thresholds and the cascade band chosen by the routing cost on out-of-fold
probabilities (the threshold shift of v6 and later is ``router_shift``'s).

Deterministic, on any CPU: embeddings come from the numpy encoders (``loomc.risk.minilm`` in
float64, one prompt at a time; ``loomc.risk.static``, float64 means of the shipped table's rows),
and everything after them is float64 numpy too. Another CPU or BLAS build only changes summation
order, which moves a probability by ~1e-13, while the thresholds and the band are picked on a
0.01 grid, so they come out identical (the int8 torch encoder this replaced did not: its kernels
differ between CPUs). Folds are assigned by position within each label; the regulariser, the
Platt calibration and the thresholds are chosen by cross-validation on the rows given only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from loomc.policy.models import RiskSettings
from loomc.risk.cues import floors_of
from loomc.risk.encoders import static_embedding
from loomc.risk.factory import make_keywords
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.minilm import MiniLM
from loomc.risk.router import assemble, knn_features, router_features
from loomc.risk.signals import SIGNAL_NAMES, V7_NAMES, V8_NAMES, V10_WIDTH, signal_columns
from loomc.risk.static import StaticEncoder

LAMBDAS = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
FOLDS = 5
# Costs for choosing thresholds: over-escalating costs one extra call; missing a high prompt
# is the costly error. The high cost (v4: 6, was 4) was chosen by 5-fold CV of the whole
# cascade on the train splits, with the floors: the largest cut in missed high prompts that
# keeps CV accuracy >= 90% (4: 93.4%, 7 of 278 missed; 6: 91.1%, 3 missed; 8: 91.1%, 3 missed;
# 12: 86.3%, 1 missed). No held-out split was read to choose it. (The v5 attempt, commit
# cdde924, not adopted: on its 754 train rows 4, 6 and 7 gave the same cascade, CV 93.5% with
# 7 of 314 high missed; 8: 88.5%, 1 missed; see evals/routing/README.md.)
COST_FP, COST_FN_MEDIUM, COST_FN_HIGH = 1.0, 2.0, 6.0
GRID = np.round(np.arange(0.05, 0.951, 0.01), 2)
TRAIN_DTYPE = "float64"  # the encoder precision that makes retraining CPU-independent


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))


Block = tuple[int, float]  # (the first columns, their penalty's multiple): the embedding's


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    lam: float,
    iters: int = 50,
    weight: np.ndarray | None = None,
    block: Block | None = None,
) -> tuple[np.ndarray, float]:
    """Ridge-penalised logistic regression by Newton's method (the bias is not penalised);
    ``weight``: each row's weight in the likelihood (None: 1 each); ``block``: the first
    ``block[0]`` columns (the sentence embedding) penalised ``block[1]`` times as hard."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, lam)
    if block is not None:
        reg[: block[0]] *= block[1]
    reg[-1] = 1e-8
    rw = np.ones(n) if weight is None else weight
    for _ in range(iters):
        p = sigmoid(xb @ w)
        grad = xb.T @ (rw * (p - y)) + reg * w
        hess = (xb * (rw * p * (1 - p))[:, None]).T @ xb + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return w[:-1], float(w[-1])


def fit_platt(
    logit: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None
) -> tuple[float, float]:
    """Platt scaling with the usual smoothed targets; ``weight`` as ``fit_logistic``'s."""
    rw = np.ones(len(y)) if weight is None else weight
    pos, neg = float(np.sum(rw * y)), float(np.sum(rw * (1 - y)))
    t = np.where(y > 0, (pos + 1) / (pos + 2), 1 / (neg + 2))
    a, b = 1.0, 0.0
    for _ in range(100):
        p = sigmoid(a * logit + b)
        g = np.array([np.sum(rw * (p - t) * logit), np.sum(rw * (p - t))])
        s = rw * p * (1 - p) + 1e-12
        h = np.array(
            [[np.sum(s * logit * logit), np.sum(s * logit)], [np.sum(s * logit), np.sum(s)]]
        )
        h += np.eye(2) * 1e-9
        step = np.linalg.solve(h, g)
        a, b = a - float(step[0]), b - float(step[1])
        if float(np.max(np.abs(step))) < 1e-12:
            break
    return a, b


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    return mean, np.where(scale < 1e-6, 1.0, scale)


def folds_of(y: np.ndarray, k: int = FOLDS) -> np.ndarray:
    """Stratified, deterministic: the i-th row of each label goes to fold i mod k."""
    fold = np.zeros(len(y), dtype=int)
    for label in (0, 1):
        idx = np.flatnonzero(y == label)
        fold[idx] = np.arange(len(idx)) % k
    return fold


def oof_logits(
    x: np.ndarray,
    y: np.ndarray,
    lam: float,
    fold: np.ndarray,
    weight: np.ndarray | None = None,
    block: Block | None = None,
) -> np.ndarray:
    out = np.zeros(len(y))
    for f in range(int(fold.max()) + 1):
        tr, va = fold != f, fold == f
        mean, scale = standardise(x[tr])
        rw = None if weight is None else weight[tr]
        w, b = fit_logistic((x[tr] - mean) / scale, y[tr], lam, weight=rw, block=block)
        out[va] = ((x[va] - mean) / scale) @ w + b
    return out


def choose_thresholds(
    prob: np.ndarray,
    y: np.ndarray,
    high: np.ndarray,
    kw_high: np.ndarray,
    floor: np.ndarray,
    cost_high: float = COST_FN_HIGH,
    weight: np.ndarray | None = None,
) -> tuple[float, float, float]:
    """(threshold, signal_threshold, cost) minimising the routing cost on out-of-fold probs.

    ``signal_threshold`` (<= threshold) applies when the keyword rules see a risk signal; a
    prompt on which a floor cue fires (``floor``) escalates whatever its probability.
    ``weight``: each row's weight in the cost (``strata.stratum_weights``; None: every row 1).
    Ties go to the pair closest to (0.5, threshold).
    """
    costs = row_costs(y == 1, high, cost_high, weight)
    best: tuple[float, float, float, float] | None = None
    for t in GRID:
        for ts in GRID[t >= GRID]:
            esc = np.where(kw_high, prob >= ts, prob >= t) | floor
            cost = round(float(np.sum(np.where(esc, costs[0], costs[1]))), 9)
            tie = abs(t - 0.5) + abs(t - ts)
            key = (cost, tie, float(t), float(ts))
            if best is None or key[:2] < best[:2]:
                best = key
    assert best is not None
    return best[2], best[3], best[0]


def row_costs(
    y: np.ndarray, high: np.ndarray, cost_high: float, weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's cost if escalated and if not: an escalated harmless row costs ``COST_FP``, an
    unescalated escalate row ``cost_high`` (high) or ``COST_FN_MEDIUM``; times its weight."""
    y = y.astype(bool)
    if_escalated = np.where(y, 0.0, COST_FP)
    if_not = np.where(y, np.where(high, cost_high, COST_FN_MEDIUM), 0.0)
    if weight is None:
        return if_escalated, if_not
    return if_escalated * weight, if_not * weight


def corpus_features(
    rows: Sequence[Mapping[str, Any]],
    encoder: MiniLM | StaticEncoder,
    keywords: KeywordProfiler,
    *,
    signals: bool | str = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The classifier's input for ``rows`` and their embeddings; ``signals`` adds the columns of
    ``loomc.risk.signals`` after the neighbour features: ``"v7"`` (or True) the task and
    code-hazard columns, ``"v8"`` those and the exposure columns (``loomc.risk.exposure``),
    ``"v9"`` those and the purpose columns (``loomc.risk.purpose``), ``"v10"`` those and the
    context block (``loomc.risk.context``: the static embedding of a code prompt's prose)."""
    prompts = [str(r["prompt"]) for r in rows]
    emb = encoder.encode(prompts)
    kw = np.array([router_features(keywords, p) for p in prompts], dtype=np.float64)
    # Neighbour evidence as served: against the float16-stored train embeddings, leaving each
    # prompt itself out (in the shipped file every train prompt is in the index).
    index = emb.astype(np.float16).astype(np.float64)
    y = np.array([bool(r["expectedEscalation"]) for r in rows], dtype=np.float64)
    sims = emb.astype(np.float64) @ index.T
    np.fill_diagonal(sims, -np.inf)
    knn = knn_features(sims, y)
    x = assemble(emb, kw, knn, emb.shape[1] + kw.shape[1] + knn.shape[1])
    if signals:
        widths = {
            "v7": len(V7_NAMES),
            "v8": len(V8_NAMES),
            "v9": len(SIGNAL_NAMES),
            "v10": V10_WIDTH,
        }
        width = widths["v7" if signals is True else str(signals)]
        cols = [signal_columns(p, width, static_embedding) for p in prompts]
        x = np.hstack([x, np.array(cols, dtype=np.float64)])
    return x, emb


def row_flags(
    rows: Sequence[Mapping[str, Any]], keywords: KeywordProfiler
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row: escalate (the label), high, escalated by a keyword signal at level high, and
    the cue floor: what thresholds and bands are chosen against."""
    y = np.array([bool(r["expectedEscalation"]) for r in rows])
    high = np.array([r.get("level") == "high" for r in rows])
    kw_high = np.array(
        [
            bool(keywords.signals_of(str(r["prompt"])))
            and keywords.profile(str(r["prompt"])).level == "high"
            for r in rows
        ]
    )
    return y, high, kw_high, floors(rows)


def train(
    rows: Sequence[Mapping[str, Any]],
    encoder: MiniLM | StaticEncoder,
    *,
    verbose: bool = True,
    cost_high: float = COST_FN_HIGH,
    signals: bool | str = False,
    weight: np.ndarray | None = None,
    fit_weight: np.ndarray | None = None,
    embedding_penalties: Sequence[float] = (1.0,),
) -> dict[str, np.ndarray]:
    """Fit on ``rows`` (the train split); return the arrays the data file stores.

    Pass a float64 ``encoder`` for a file that any machine reproduces exactly. ``cost_high``:
    the cost of a missed high prompt when the thresholds are chosen (v6 chose its own by
    leave-one-split-out CV, ``research/loso_router.py``). ``signals``: v7's or v8's extra columns (``corpus_features``).
    ``weight``: each row's weight in the cost the thresholds are chosen by (``strata.stratum_weights``).
    ``fit_weight``: each row's weight in the likelihood (the fit, the regulariser's choice, the
    Platt calibration), so that the probability is calibrated for that mix of traffic.
    ``embedding_penalties``: multiples of the ridge on the sentence embedding's columns (the
    rest keep the chosen lambda), chosen with lambda by the same CV log-loss (ties to the
    smaller); (1.0,), the default, is the plain ridge of every release to v28, array for array.
    Why: the weighted heads let the embedding carry short generic requests ("List two benefits
    of version control.") to P 0.3-0.7 against neighbours that are all harmless.
    """
    keywords = make_keywords(RiskSettings())
    x, emb = corpus_features(rows, encoder, keywords, signals=signals)
    labels, high, kw_high, floor = row_flags(rows, keywords)
    y = labels.astype(np.float64)
    fold = folds_of(y)
    width = emb.shape[1]

    scores = {}
    for mult in embedding_penalties:
        block = None if mult == 1.0 else (width, float(mult))
        for lam in LAMBDAS:
            z = oof_logits(x, y, lam, fold, fit_weight, block)
            p = np.clip(sigmoid(z), 1e-9, 1 - 1e-9)
            loss = y * np.log(p) + (1 - y) * np.log(1 - p)
            scores[mult, lam] = float(-np.mean(loss if fit_weight is None else fit_weight * loss))
    mult, lam = min(scores, key=lambda k: (round(scores[k], 9), k))
    block = None if mult == 1.0 else (width, float(mult))
    z = oof_logits(x, y, lam, fold, fit_weight, block)
    a, b = fit_platt(z, y, fit_weight)
    prob = sigmoid(a * z + b)
    t, ts, cost = choose_thresholds(prob, y, high, kw_high, floor, cost_high, weight)
    esc = decide(prob, kw_high, t, ts, floor)
    if verbose:
        if tuple(embedding_penalties) == (1.0,):
            print("cv log-loss by lambda:", {k[1]: round(v, 4) for k, v in scores.items()})
        else:
            print(
                "cv log-loss by (embedding penalty, lambda):",
                {k: round(v, 4) for k, v in scores.items()},
            )
            print(f"embedding penalty={mult}")
        print(f"lambda={lam} platt a={a:.4f} b={b:.4f} threshold={t:.2f} signal_threshold={ts:.2f}")
        cv_acc = float(np.mean(esc == (y == 1)))
        cv_high_under = float(np.mean(~esc[(y == 1) & high]))
        print(
            f"cv accuracy {cv_acc:.4f}  cv high under-escalation {cv_high_under:.4f}  cost {cost}"
        )

    mean, scale = standardise(x)
    w, bias = fit_logistic((x - mean) / scale, y, lam, weight=fit_weight, block=block)
    chosen = {} if tuple(embedding_penalties) == (1.0,) else {"embedding_penalty": np.float64(mult)}
    return chosen | {
        "weights": w.astype(np.float64),
        "bias": np.float64(bias),
        "mean": mean.astype(np.float64),
        "scale": scale.astype(np.float64),
        "platt_a": np.float64(a),
        "platt_b": np.float64(b),
        "threshold": np.float64(t),
        "signal_threshold": np.float64(ts),
        "medium_threshold": np.float64(round(t / 2, 2)),
        "lambda": np.float64(lam),
        "train_ids": np.array([str(r["id"]) for r in rows]),
        "train_labels": y.astype(bool),
        "train_levels": np.array([str(r.get("level", "")) for r in rows]),
        "train_emb": emb.astype(np.float16),
        # out-of-fold calibrated probabilities, kept so a cascade can be fitted on them
        "cv_prob": prob.astype(np.float64),
    }


MAX_DEFER = 0.35  # share of train prompts the cascade may send on to MiniLM (keeps p50 static)


def decide(
    prob: np.ndarray, kw_high: np.ndarray, t: float, ts: float, floor: np.ndarray
) -> np.ndarray:
    """The served decision: the probability against its threshold, or a floor cue."""
    return np.where(kw_high, prob >= ts, prob >= t) | floor


def floors(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Which rows a floor cue (``loomc.risk.cues.FLOORS``) escalates regardless."""
    return np.array([bool(floors_of(str(r["prompt"]))) for r in rows], dtype=bool)


def choose_band(
    first: Mapping[str, np.ndarray],
    second: Mapping[str, np.ndarray],
    rows: Sequence[Mapping[str, Any]],
    keywords: KeywordProfiler,
    *,
    cost_high: float = COST_FN_HIGH,
    mode: str = "decide",
    max_defer: float = MAX_DEFER,
    weight: np.ndarray | None = None,
    keep: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[float, float, float, float]:
    """(low, high, cost, deferred share) of the cascade: prompts whose first-stage (static)
    probability lies strictly between ``low`` and ``high`` are decided by the second stage
    (MiniLM), the rest by the first. Chosen on both files' out-of-fold probabilities over the
    same train rows, minimising the routing cost with at most ``MAX_DEFER`` of the prompts sent
    on; ties go to the narrower band (fewer forward passes). ``mode`` ``"or"`` (semantic-v6): a
    prompt in the band escalates when either stage escalates it. ``max_defer`` (semantic-v9: a
    candidate setting) caps the share deferred: each deferred prompt pays MiniLM's forward pass.
    ``weight``: each row's weight in the cost (the deferred share stays a share of rows).
    ``keep``: prompts every allowed band must decide right, as (their first-stage probability,
    whether the first stage decides each right, whether the second does) (``band_for_keep.py``:
    the reference suite); ValueError when no band within the cap does."""
    if keep is not None and mode != "decide":
        raise ValueError("only a band that the second stage decides in can keep prompts")
    y, high, kw_high, floor = row_flags(rows, keywords)
    costs = row_costs(y, high, cost_high, weight)
    p1, p2 = first["cv_prob"], second["cv_prob"]
    e1 = decide(p1, kw_high, float(first["threshold"]), float(first["signal_threshold"]), floor)
    e2 = decide(p2, kw_high, float(second["threshold"]), float(second["signal_threshold"]), floor)
    best: tuple[float, float, float, float] | None = None
    edges = np.concatenate([[0.0], GRID, [1.0]])
    for lo in edges:
        for hi in edges[edges > lo]:
            defer = (p1 > lo) & (p1 < hi)
            if defer.mean() > max_defer:
                continue
            if keep is not None and not np.all(
                np.where((keep[0] > lo) & (keep[0] < hi), keep[2], keep[1])
            ):
                continue
            esc = np.where(defer, (e1 | e2) if mode == "or" else e2, e1)
            cost = round(float(np.sum(np.where(esc, costs[0], costs[1]))), 9)
            key = (cost, float(defer.mean()), float(lo), float(hi))
            if best is None or key[:2] < (best[2], best[3]):
                best = (float(lo), float(hi), cost, float(defer.mean()))
    if best is None:
        raise ValueError("no band within the cap decides every prompt to keep right")
    return best
