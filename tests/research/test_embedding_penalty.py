"""The ridge on the sentence embedding's columns (``train_router.py --embedding-penalty``, v30):
``router_fit.fit_logistic``'s ``block``, and ``train``'s choice of a multiple with lambda.

Why these checks: a multiple M on a block's ridge must mean exactly what a ridge means (the fit
on those columns shrunk by the square root of M, so the rest of the model sees the same
problem), a multiple of 1 must leave every fit as it was (CI retrains every release before
v30 byte for byte), heavier multiples must shrink the block, and the CV must choose the
multiple with the lowest log-loss, as it chooses lambda.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from research_script import research_script

fit = research_script("router_fit")
trainer = research_script("train_router")
ROOT = Path(__file__).resolve().parents[2]


def _data(seed: int, n: int = 80, d: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = (x[:, 0] + 0.5 * x[:, 4] + rng.normal(scale=1.0, size=n) > 0).astype(float)
    return x, y


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), mult=st.sampled_from([0.5, 2.0, 10.0, 100.0]))
def test_a_multiple_on_the_block_is_the_ridge_on_those_columns_shrunk(
    seed: int, mult: float
) -> None:
    """Penalising w_j by M*lam is fitting x_j / sqrt(M) under lam: x_j w_j is the same."""
    x, y = _data(seed)
    k = 3
    w, b = fit.fit_logistic(x, y, 2.0, block=(k, mult))
    shrunk = x.copy()
    shrunk[:, :k] /= np.sqrt(mult)
    v, c = fit.fit_logistic(shrunk, y, 2.0)
    np.testing.assert_allclose(w[:k], v[:k] / np.sqrt(mult), atol=1e-8)
    np.testing.assert_allclose(w[k:], v[k:], atol=1e-8)
    assert b == pytest.approx(c, abs=1e-8)


def test_a_multiple_of_one_changes_no_fit() -> None:
    x, y = _data(3)
    w, b = fit.fit_logistic(x, y, 1.0)
    v, c = fit.fit_logistic(x, y, 1.0, block=(4, 1.0))
    assert np.array_equal(w, v) and b == c


def test_heavier_multiples_shrink_the_block() -> None:
    x, y = _data(5)
    norms = [
        np.linalg.norm(fit.fit_logistic(x, y, 1.0, block=(3, m))[0][:3]) for m in (1, 3, 10, 30)
    ]
    assert norms == sorted(norms, reverse=True) and norms[-1] < norms[0] / 3


def _rows_and_encoder(seed: int, n: int = 60) -> tuple[list[dict[str, object]], object]:
    """Rows whose label leans on the embedding's first column (the keyword features see nothing
    in "prompt i"): a small problem the CV can score at every multiple."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, 384)) * 0.1
    labels = rng.random(n) < 0.5
    emb[:, 0] += np.where(labels, 1.0, -1.0)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    rows = [
        {
            "id": f"r{i}",
            "prompt": f"prompt {i}",
            "expectedEscalation": bool(labels[i]),
            "level": "high" if labels[i] else "low",
        }
        for i in range(n)
    ]
    table = {str(r["prompt"]): emb[i] for i, r in enumerate(rows)}
    return rows, trainer.Precomputed(table)


def test_train_chooses_the_multiple_and_lambda_with_the_lowest_cv_log_loss(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows, encoder = _rows_and_encoder(1)
    plain = fit.train(rows, encoder, verbose=False)
    assert "embedding_penalty" not in plain  # the plain ridge records nothing: files as before
    again = fit.train(rows, encoder, verbose=False, embedding_penalties=(1.0,))
    assert all(np.array_equal(plain[k], again[k]) for k in plain)
    chosen = fit.train(rows, encoder, embedding_penalties=(1.0, 3.0, 1e4))
    said = capsys.readouterr().out
    scores = ast.literal_eval(
        said.split("cv log-loss by (embedding penalty, lambda): ")[1].splitlines()[0]
    )
    assert {m for m, _ in scores} == {1.0, 3.0, 1e4} and len(scores) == 3 * len(fit.LAMBDAS)
    best = min(scores, key=lambda k: (scores[k], k))
    assert (float(chosen["embedding_penalty"]), float(chosen["lambda"])) == best
    # a multiple given alone is used, and squeezes the embedding's weights
    forced = fit.train(rows, encoder, verbose=False, embedding_penalties=(1e4,))
    assert float(forced["embedding_penalty"]) == 1e4
    assert np.linalg.norm(forced["weights"][:384]) < np.linalg.norm(plain["weights"][:384]) / 10


def _train_router(tmp_path: Path, train: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(ROOT / "research" / "train_router.py"), "--train"]
    argv += [str(tmp_path / train), "--out", str(tmp_path / "o.npz"), *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("multiples", [["0"], ["-1"], ["3", "3"]])
def test_a_bad_multiple_is_refused_in_one_line(tmp_path: Path, multiples: list[str]) -> None:
    done = _train_router(tmp_path, "x.jsonl", "--embedding-penalty", *multiples)
    assert done.returncode == 2 and "distinct multiples above 0" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o.npz").exists()


def test_a_missing_training_file_is_refused_in_one_line(tmp_path: Path) -> None:
    done = _train_router(tmp_path, "absent.jsonl")
    assert done.returncode == 2 and "absent.jsonl: cannot read" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
