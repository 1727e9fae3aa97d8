"""The numpy int8 MiniLM (``loomc.risk.minilm_q8.MiniLMQ8``) against a plain re-statement of its
definition: int64 integer products, one float64 operation per line, no buffers, no layouts.

Why: fast9 made the reference's pass faster (the weight as the left sgemm operand, float64
steps into one output buffer, codes computed in place); the definition must not move. The
re-statement below follows the module docstring step by step, so a speed-up that changes a
rounding anywhere (a code across a boundary: ~1e-4 on the embedding) fails here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from corpus_files import bounded_stride
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.risk.evaluate import load_rows
from loomc.risk.minilm_q8 import TANH_C, TANH_K

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-12  # the brief's bound; the two are expected bit-identical


def codes(x: np.ndarray) -> tuple[np.ndarray, float]:
    """DynamicQuantizeLinear in float32, as int64 (q - zero point), and the scale."""
    x32 = x.astype(np.float32)
    lo = min(np.float32(0), x32.min())
    hi = max(np.float32(0), x32.max())
    scale = np.float32((hi - lo) / np.float32(255))
    if scale == 0:
        return np.zeros(x.shape, dtype=np.int64), 0.0
    zp = np.clip(np.rint(np.float32(0) - lo / scale), 0, 255)
    q = np.clip(np.rint(x32 / scale) + zp, 0, 255)
    return (q - zp).astype(np.int64), float(scale)


def linear(w: dict[str, np.ndarray], x: np.ndarray, key: str) -> np.ndarray:
    """int8 linear layer: integer product in int64, times both scales, outliers, bias."""
    keep = w.get(f"{key}.keep")
    a, xs = codes(x if keep is None else x * keep)
    q = np.rint(w[key]).astype(np.int64)  # the stored integer weight, (out, in)
    acc = (a @ q.T).astype(np.float64)
    out = acc * (np.float64(xs) * w[f"{key}.scale"])
    if keep is not None:
        out = out + x[:, w[f"{key}.oidx"]] @ w[f"{key}.orows"]
    return out + w[f"{key}_b"]


def layer_norm(w: dict[str, np.ndarray], x: np.ndarray, key: str, eps: float) -> np.ndarray:
    c = x - x.mean(axis=-1, keepdims=True)
    var = (c * c).mean(axis=-1, keepdims=True) + eps
    return c / np.sqrt(var) * w[f"{key}.weight"] + w[f"{key}.bias"]


def restated(enc: Any, ids: list[int]) -> np.ndarray:
    """The unit embedding of ``ids`` by the definition (module docstring of minilm_q8)."""
    w, n = enc._w, len(ids)
    x = w["word"][np.asarray(ids)].astype(np.float64) + w["pos"][:n] + w["type0"]
    x = layer_norm(w, x, "emb_ln", enc.eps)
    d = x.shape[1]
    hd = d // enc.heads
    for i in range(enc.layers):
        qkv = linear(w, x, f"{i}.qkv")
        q, k, v = (
            qkv[:, j * d : (j + 1) * d].reshape(n, enc.heads, hd).transpose(1, 0, 2)
            for j in range(3)
        )
        scores = (q @ k.transpose(0, 2, 1)) * (1.0 / math.sqrt(hd))
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = e / e.sum(axis=-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, d)
        x = layer_norm(w, linear(w, ctx, f"{i}.attn_out") + x, f"{i}.ln1", enc.eps)
        h = linear(w, x, f"{i}.inter")
        g = (np.tanh((h + (h * h * h) * TANH_K) * TANH_C) + 1.0) * h * 0.5
        x = layer_norm(w, linear(w, g, f"{i}.out") + x, f"{i}.ln2", enc.eps)
    pooled = x.mean(axis=0)
    out: np.ndarray = pooled / max(float(np.sqrt(pooled @ pooled)), 1e-12)
    return out


def corpus_prompts() -> list[str]:
    paths = sorted((ROOT / "evals" / "routing").glob("*.jsonl"))
    return list(dict.fromkeys(str(r["prompt"]) for p in paths for r in load_rows(p)))


def test_reference_is_its_definition_on_corpus_prompts(q8_ref: Any) -> None:
    # every 40th (56 of the 2,256 prompts it was written for), the stride widening as the corpus
    # grows so the check stays near a minute (all of them: the benchmark)
    prompts = bounded_stride(corpus_prompts(), 60, 40)
    got = q8_ref.encode(prompts)
    for text, row in zip(prompts, got, strict=True):
        assert float(np.abs(row - restated(q8_ref, q8_ref.token_ids(text))).max()) <= TOL, text


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=300))
def test_reference_is_its_definition_on_any_text(q8_ref: Any, text: str) -> None:
    got = q8_ref.encode([text])[0]
    assert float(np.abs(got - restated(q8_ref, q8_ref.token_ids(text))).max()) <= TOL


def test_a_short_prompt_after_a_long_one_gets_its_own_numbers(q8_ref: Any) -> None:
    """Nothing of a pass outlives it: a 256-token prompt then a 3-token one, in one call and
    in two, give the short one's embedding bit for bit."""
    long, short = "the river bank " * 200, "hello there"
    alone = q8_ref.encode([short])
    assert np.array_equal(q8_ref.encode([long, short])[1], alone[0])
    q8_ref.encode([long])
    assert np.array_equal(q8_ref.encode([short]), alone)
