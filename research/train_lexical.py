"""Train the lexical model of ``loomc.risk.lexical`` (the ``lexical-floor`` of semantic-v25).

    PYTHONPATH=$PWD .venv/bin/python research/train_lexical.py --files train test ... \
        --out loomc/risk/data/lexical-v25.npz [--c 8] [--eval FILE ...]

What it fits: an L2-regularised logistic regression (scikit-learn's objective: ``C`` times the
summed log-loss plus half the squared weights, the intercept unpenalised) over the hashed,
sublinear TF-IDF character n-grams that ``loomc.risk.lexical`` computes at serve time: the
featuriser is the served one, so training and serving cannot drift apart. Buckets seen in fewer
than ``--min-df`` training prompts get no weight (their idf is stored as 0). The optimiser is a
plain L-BFGS over numpy (no scipy or scikit-learn in the project: the sparse products are a
``bincount`` and a ``reduceat``), stopped when the gradient's largest entry falls under 1e-6.

Why no new dependency: the whole fit is ~60 lines of numpy, and the model it makes is checked
against its own decisions, not against another library's floats. The exploration that chose
the recipe (n-grams 2-5 inside words, sublinear TF-IDF, ``C`` = 8) used scikit-learn in a
scratch environment; ``--eval`` prints the same table for the numpy fit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

from loomc.risk.lexical import BUCKETS, MAX_N, MIN_N, LexicalModel, counts  # noqa: E402
from strata import ordinary_weights, rows_and_strata  # noqa: E402

CORPUS = ROOT / "evals" / "routing"


class Sparse:
    """Rows of (bucket, value) pairs in CSR form, with the two products the fit needs."""

    def __init__(self, rows: list[dict[int, int]]) -> None:
        self.n = len(rows)
        self.indptr = np.zeros(self.n + 1, dtype=np.int64)
        self.indptr[1:] = np.cumsum([len(r) for r in rows])
        self.indices = np.fromiter((b for r in rows for b in sorted(r)), np.int64)
        self.tf = np.fromiter((r[b] for r in rows for b in sorted(r)), np.float64)
        self.row_of = np.repeat(np.arange(self.n), np.diff(self.indptr))
        self.data = np.zeros_like(self.tf)

    def weigh(self, idf: np.ndarray) -> None:
        """Sublinear TF-IDF, each row scaled to unit length (as ``lexical.tfidf``)."""
        v = (1.0 + np.log(self.tf)) * idf[self.indices]
        norms = np.sqrt(np.bincount(self.row_of, weights=v * v, minlength=self.n))
        self.data = v / np.where(norms > 0, norms, 1.0)[self.row_of]

    def dot(self, w: np.ndarray) -> np.ndarray:
        return np.bincount(self.row_of, weights=self.data * w[self.indices], minlength=self.n)

    def tdot(self, r: np.ndarray) -> np.ndarray:
        return np.bincount(self.indices, weights=self.data * r[self.row_of], minlength=BUCKETS)


def objective(
    x: Sparse, y: np.ndarray, c: float, theta: np.ndarray, weight: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """``C`` times the summed log-loss (each row's times its ``weight``) plus half the squared
    weights, and its gradient."""
    w, b = theta[:-1], theta[-1]
    z = x.dot(w) + b
    s = np.where(y, 1.0, -1.0)
    rows = np.logaddexp(0.0, -s * z)
    r = -s / (1.0 + np.exp(s * z))  # d loss / d z
    if weight is not None:
        rows, r = rows * weight, r * weight
    loss = rows.sum()
    grad = np.empty_like(theta)
    grad[:-1] = c * x.tdot(r) + w
    grad[-1] = c * r.sum()
    return c * loss + 0.5 * float(w @ w), grad


def lbfgs(
    x: Sparse,
    y: np.ndarray,
    c: float,
    memory: int = 10,
    steps: int = 1000,
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """Minimise ``objective`` from zero; stop when ten steps together lower it by less than a
    billionth of its value (the decisions stopped moving long before), or after ``steps``."""
    theta = np.zeros(BUCKETS + 1)
    f, g = objective(x, y, c, theta, weight)
    hist: list[tuple[np.ndarray, np.ndarray, float]] = []
    trail = [f]
    for step_no in range(steps):
        if len(trail) > 10 and trail[-11] - trail[-1] < 1e-9 * abs(trail[-1]):
            break
        if step_no % 50 == 0:
            print(
                f"  step {step_no}: objective {f:.6f}, gradient {np.abs(g).max():.2e}", flush=True
            )
        q = g.copy()
        alphas = []
        for s_, y_, rho in reversed(hist):
            a = rho * float(s_ @ q)
            alphas.append(a)
            q -= a * y_
        if hist:
            s_, y_, _ = hist[-1]
            q *= float(s_ @ y_) / float(y_ @ y_)
        for (s_, y_, rho), a in zip(hist, reversed(alphas), strict=True):
            q += s_ * (a - rho * float(y_ @ q))
        d = -q
        step = 1.0 if hist else 1.0 / max(1.0, float(np.abs(g).max()))
        while True:  # Armijo backtracking
            new = theta + step * d
            f2, g2 = objective(x, y, c, new, weight)
            if f2 <= f + 1e-4 * step * float(g @ d) or step < 1e-12:
                break
            step *= 0.5
        s_, y_ = new - theta, g2 - g
        if float(s_ @ y_) > 1e-12:
            hist.append((s_, y_, 1.0 / float(s_ @ y_)))
            hist = hist[-memory:]
        theta, f, g = new, f2, g2
        trail.append(f)
    return theta


def fit(
    rows: list[dict[str, Any]], c: float, min_df: int, weight: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The model's arrays; ``weight``: each row's weight in the log-loss (``--ordinary-weight``;
    the idf stays a count of prompts)."""
    x = Sparse([counts(str(r["prompt"])) for r in rows])
    y = np.array([bool(r["expectedEscalation"]) for r in rows])
    df = np.bincount(x.indices, minlength=BUCKETS)
    idf = np.where(df >= min_df, np.log((1.0 + x.n) / (1.0 + df)) + 1.0, 0.0).astype(np.float32)
    x.weigh(idf.astype(np.float64))
    theta = lbfgs(x, y, c, weight=weight)
    return {
        "weights": theta[:-1].astype(np.float32),
        "idf": idf,
        "intercept": np.array(theta[-1]),
        "threshold": np.array(0.5),
    }


def model_of(arrays: dict[str, np.ndarray]) -> LexicalModel:
    """``fit``'s arrays as the served model holds them (float32 memoryviews), to score a fresh
    fit without writing it."""

    def view(a: np.ndarray) -> Any:
        return memoryview(np.ascontiguousarray(a, dtype="<f4").tobytes()).cast("f")

    return LexicalModel(
        view(arrays["weights"]),
        view(arrays["idf"]),
        float(arrays["intercept"]),
        float(arrays["threshold"]),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", required=True, help="corpus files (names, no .jsonl)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--c", type=float, default=8.0)
    ap.add_argument("--min-df", type=int, default=2)
    ap.add_argument("--release", default="semantic-v25")
    ap.add_argument(
        "--ordinary-weight",
        type=float,
        help="the share of the log-loss the rows of everyday-* files weigh (the rest 1 minus "
        "it; within each, rows alike); default: every row alike",
    )
    args = ap.parse_args()
    paths = [CORPUS / f"{n}.jsonl" for n in args.files]
    rows, strata = rows_and_strata(paths)
    try:
        weight = ordinary_weights(strata, args.ordinary_weight)
    except ValueError as exc:
        ap.error(str(exc))
    arrays = fit(rows, args.c, args.min_df, weight)
    meta = {
        "release": args.release,
        "corpus": [p.name for p in paths],
        "corpus_sha256": [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths],
        "rows": len(rows),
        "c": args.c,
        "min_df": args.min_df,
        "buckets": BUCKETS,
        "ngrams": [MIN_N, MAX_N],
        "hash": "crc32",
    }
    if args.ordinary_weight is not None:
        meta["ordinary_weight"] = args.ordinary_weight
    with args.out.open("wb") as fh:
        np.savez(fh, **arrays, meta=np.array(json.dumps(meta, sort_keys=True)))
    print(f"{args.out}: {len(rows)} rows, intercept {float(arrays['intercept']):.4f}")


if __name__ == "__main__":
    main()
