"""all-MiniLM-L6-v2 with int8 linear layers whose numbers are defined, not kernel-dependent.

Why: int8 is what gets MiniLM's pass near 5 ms a prompt on one core (benchmarks/README.md,
``ort11``), but ONNX Runtime's ``quantize_dynamic`` output runs on u8 x s8 kernels that, on
AVX2 machines without VNNI, sum pairs of products in int16 with saturation (``vpmaddubsw``), so
the same model gave different embeddings on different CPUs; a router trained on them would
depend on the machine that trained it. Here the quantisation is ours and exact on every kernel:

- weights: every Linear weight symmetric int8 per output channel, computed at load from the
  packaged safetensors (``quantise``): scale = max|w| / 63, q = round(w / scale) in [-63, 63].
  Seven bits, not eight, so that a u8 x s8 pair sum is at most 2 * 255 * 63 = 32,130 < 2^15:
  the int16 intermediate of ``vpmaddubsw`` cannot saturate, and VNNI, ARM's dot products and
  plain int32 kernels all compute the same integers (``reduce_range`` in ORT's terms).
- activations: per tensor, uint8 with a zero point, computed as ORT's ``DynamicQuantizeLinear``
  computes it (``activations``): x cast to float32, scale = (max(0, x) - min(0, x)) / 255, zero
  point = round(-min / scale), q = round(x / scale) + zero point (float32 division, rounding
  half to even, clipped to [0, 255]).
- the product: the integer accumulator of (q_x - zero point) x q_w, times the two scales'
  product (float64), plus the bias.
- outlier channels (``OUTLIERS``, fixed by ``research/calibrate_q8.py``): the few input
  channels of a layer whose values dwarf the rest (MiniLM's residual dimension 99 reaches ~30
  at the FFN's input where the median channel stays under 2) are zeroed before quantising and
  multiplied in float (tokens x 1-4 by 1-4 x out), LLM.int8()'s decomposition with a fixed set:
  with them in, a per-tensor step of ~0.12 put most FFN inputs on a handful of codes (the
  embedding ~2e-2 from the float model's, cosine >= 0.985; without, ~1e-2, >= 0.994).
- everything else in float64: attention's two products, LayerNorm, softmax, and GELU in its
  tanh form, x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 (ORT has no float64 Erf).

Why float64 between the integer products, not float32: the codes are a step function of the
activations, and a float32 difference of ~1e-7 (another summation order, another exp) crosses
a rounding boundary somewhere in most passes; the step that follows is of the int8 noise's own
size. With the float parts in float32 on ORT and float64 in numpy, embeddings differed by up
to 1e-2 and 7 of 2,256 corpus decisions of a release moved. In float64 both sides round the
same codes (a difference of ~1e-16 essentially never lands on a boundary): over the 2,256
corpus prompts ORT's embedding is within 4e-16 of the reference's and no decision differs.

Two implementations of the one definition:

- ``MiniLMQ8`` (numpy, the reference, what training uses): the integer products are float32
  matmuls over integer values in chunks of at most ``EXACT_K`` terms, so every partial sum is an
  integer below 2^24 and exact in float32 whatever the BLAS's order (``accumulate``; the tests
  check it against int64), summed in float64; the rest in float64. So its embeddings are the
  same on every CPU and BLAS up to float64 rounding.
- ``OrtMiniLMQ8`` (ONNX Runtime, what serving uses where it is installed): ``minilm_ort``'s graph
  in float64 with each linear layer as Cast + DynamicQuantizeLinear + MatMulInteger + Cast + Mul
  + Add. Its integers are exact on every kernel (7-bit weights), its float parts float64.
  ~1.5x faster than ORT's float32 graph at 16 tokens, ~2x at 128 (benchmarks/README.md, q8);
  the float32 int8 graph (ORT's fused DynamicQuantizeMatMul) was ~2x faster again, at the cost
  of the agreement above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from loomc.risk.minilm import MiniLM, TensorFile, positions
from loomc.risk.minilm_ort import TANH_C, TANH_K, OrtMiniLM
from loomc.risk.minilm_ort import _weights as float_weights

Array = npt.NDArray[Any]
QMAX = 63  # |q_w| <= 63: a u8 x s8 pair sum fits int16 (2 * 255 * 63 < 32,768)
# The most terms a float32 accumulator can sum exactly: |(q_x - zp) * q_w| <= 255 * 63, so any
# partial sum of EXACT_K terms is an integer below 2^24 (float32's exact-integer range).
EXACT_K = 2**24 // (255 * QMAX)
LINEARS = ("qkv", "attn_out", "inter", "out")  # each layer's Linear weights (minilm.py's keys)
# Input channels whose largest |x| over the calibration prompts is more than 4x the layer's
# median channel's (at most 4 a layer; research/calibrate_q8.py, float64 MiniLM over
# evals/routing/train.jsonl): MiniLM's residual dimension 99 reaches ~30 at the FFN's input where
# the median channel stays under 2, so with it per-tensor steps put most inputs on a few codes.
OUTLIERS: dict[str, tuple[int, ...]] = {
    "0.inter": (99, 63),
    "0.out": (856,),
    "1.inter": (99, 63, 223),
    "1.out": (607,),
    "2.inter": (99, 223),
    "2.out": (1004, 218),
    "2.qkv": (99,),
    "3.inter": (99, 223, 63),
    "3.out": (358,),
    "3.qkv": (99,),
    "4.inter": (99, 223, 127, 63),
    "4.qkv": (99,),
    "5.inter": (99, 223, 319, 127),
    "5.qkv": (99,),
}


def quantise(w: Array) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Symmetric per-row (output channel) int8 of ``w`` (out, in): ``q`` in [-QMAX, QMAX] and
    float32 ``scale`` with |w - q * scale| <= scale / 2; a zero row gets scale 0 and q 0."""
    w64 = np.asarray(w, dtype=np.float64)
    amax = np.abs(w64).max(axis=1)
    scale = (amax / QMAX).astype(np.float32)
    # A scale rounded down in float32 (coarsely, for subnormal rows) could leave max|w| / scale
    # above QMAX + 1/2: step it up an ulp at a time until the row's largest weight fits.
    while True:
        low = amax > scale.astype(np.float64) * (QMAX + 0.5)
        if not low.any():
            break
        scale[low] = np.nextafter(scale[low], np.float32(np.inf))
    s64 = scale.astype(np.float64)
    safe = np.where(s64 > 0, s64, 1.0)[:, None]
    q = np.clip(np.rint(w64 / safe), -QMAX, QMAX).astype(np.int8)
    return q, scale


def activations(x: Array) -> tuple[npt.NDArray[np.float32], np.float32]:
    """``x`` quantised as ORT's DynamicQuantizeLinear computes it, returned as (q - zero point):
    float32 integers in [-255, 255] (exact), with the float32 scale (0 for an all-zero ``x``).
    Every step in float32 as ORT takes it (MLAS: x cast to float32, scale = (max - min) / 255,
    zero point = round(-min / scale), q = round(x / scale) + zero point, rounding half to even,
    clipped to [0, 255]), so equal inputs give equal codes."""
    return _codes(np.array(x, dtype=np.float32))


def _codes(x32: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.float32], np.float32]:
    """``activations`` of ``x32`` (float32), overwriting it: the same float32 operations in
    the same order, without a temporary per step (fast9)."""
    f = np.float32
    lo, hi = min(f(0), x32.min()), max(f(0), x32.max())
    scale = f((hi - lo) / f(255))
    if scale == 0:
        x32[...] = 0
        return x32, scale
    zp = np.clip(np.rint(f(0) - lo / scale), 0, 255)
    q = np.divide(x32, scale, out=x32)
    np.rint(q, out=q)
    q += zp
    np.clip(q, 0, 255, out=q)
    q -= zp
    return q, scale


def accumulate(a: Array, wq: Array) -> npt.NDArray[np.float64]:
    """The integer product ``a @ wq`` (both float32 integer-valued: (q_x - zp) and q_w (in,
    out)), exact: float32 matmuls over chunks of at most ``EXACT_K`` rows of ``wq``, summed in
    float64 (every partial sum an integer below 2^24, so any summation order gives it)."""
    return np.ascontiguousarray(accumulate_t(a, np.ascontiguousarray(wq.T)).T)


def accumulate_t(a: Array, wt: Array) -> npt.NDArray[Any]:
    """``accumulate``'s product transposed, (out, tokens), from the weight as stored (``wt``:
    (out, in)): ``wt @ a.T`` in chunks of at most ``EXACT_K`` input channels, each chunk exact
    in float32. Why transposed: OpenBLAS's sgemm at these shapes (a few tokens x 384 by 384 x
    1,536) runs 1.1-1.6x faster with the weight as the left (out, in) operand than as the
    right one (benchmarks/README.md, fast9); the integers are the same whatever the layout. One
    chunk (k = 384) is returned as float32 (exact integers; the caller's float64 product widens
    them exactly), two or more are summed in float64."""
    k = wt.shape[1]
    parts = max(1, math.ceil(k / EXACT_K))
    if parts == 1:
        return wt @ a.T
    step = math.ceil(k / parts)
    acc: npt.NDArray[np.float64] = (wt[:, :step] @ a[:, :step].T).astype(np.float64)
    for start in range(step, k, step):
        acc += wt[:, start : start + step] @ a[:, start : start + step].T
    return acc


def quantise_linear(
    w: dict[str, Array], key: str, outliers: dict[str, tuple[int, ...]] | None = None
) -> None:
    """Replace ``w[key]`` (a float32 linear weight, (in, out)) in place by its int8 (in, out)
    and ``<key>.scale`` (float32, per out column).

    ``outliers`` (default ``OUTLIERS``): input channels kept out of the int8 product: their
    weight rows stay float (``<key>.orows``, with ``<key>.oidx``) and are zeroed in the int8
    weight, and ``<key>.keep`` (1, 0 at those channels) zeroes them in the input before it is
    quantised, so they no longer set the step of every other channel."""
    table = OUTLIERS if outliers is None else outliers
    weight = w[key]
    idx = table.get(key, ())
    if idx:
        oidx = np.array(idx, dtype=np.int64)
        w[f"{key}.oidx"], w[f"{key}.orows"] = oidx, np.ascontiguousarray(weight[oidx])
        keep = np.ones(weight.shape[0], dtype=np.float32)
        keep[oidx] = 0
        w[f"{key}.keep"] = keep
        weight = weight * keep[:, None]
    q, scale = quantise(weight.T)
    w[key] = np.ascontiguousarray(q.T)
    w[f"{key}.scale"] = scale


def quantised(
    w: dict[str, Array], layers: int, outliers: dict[str, tuple[int, ...]] | None = None
) -> dict[str, Array]:
    """``w`` (minilm_ort's float32 weights) with every linear weight quantised in place
    (``quantise_linear``)."""
    for i in range(layers):
        for name in LINEARS:
            quantise_linear(w, f"{i}.{name}", outliers)
    return w


class MiniLMQ8(MiniLM):
    """The int8 definition in numpy (the reference): integer products exact, float64 elsewhere."""

    backend = "numpy-q8"  # what ``loomc doctor`` names
    kind = "minilm-q8"  # the encoder a router file's meta names (``encoder_kind``)

    def __init__(self, *, threads: int = 1, path: Any = None) -> None:
        super().__init__("float64", threads=threads, path=path)

    def _weights(self, raw: TensorFile, dt: np.dtype[Any]) -> dict[str, Array]:
        """Linear weights as int8, stored (out, in) (``accumulate_t``), with their scales; the
        rest in ``dt``. Quantised as each is read (minilm_ort._weights), so no more than the
        int8 set (~11 MB) and one float32 weight are held at once.

        Why int8 and not float32 integers: the float32 copies were 44 MB, the largest part of a
        loaded profiler (an eval's 150 MiB budget, benchmarks/README.md, mem40). ``_linear``
        widens one weight at a time into ``_scratch`` (exact: every int8 is a float32), ~0.13 ns
        an element, ~1.4 ms a pass; the float32 matmul then sees the same numbers as before."""
        src = float_weights(raw, self.layers, quantise_linear)  # int8 as read
        w: dict[str, Array] = {
            "pos": positions(raw),  # float32, widened exactly by the float64 pass
            "type0": raw["embeddings.token_type_embeddings.weight"][0].astype(dt),
        }
        largest = 0
        for key in list(src):
            value = src.pop(key)
            if value.dtype == np.int8:
                w[key] = np.ascontiguousarray(value.T)
                largest = max(largest, value.size)
            elif key.endswith((".keep", ".oidx")):
                w[key] = value
            else:
                w[key] = value.astype(dt)
        self._scratch = np.empty(largest, dtype=np.float32)
        return w

    def _widened(self, key: str) -> npt.NDArray[np.float32]:
        """The int8 weight ``key`` as float32 integers, in the one scratch buffer (valid until
        the next call; ``hidden_states`` holds the encoder's lock, so passes never share it)."""
        q = self._w[key]
        wt = self._scratch[: q.size].reshape(q.shape)
        np.copyto(wt, q, casting="unsafe")  # int8 -> float32 is exact
        return wt

    def hidden_states(self, ids: Sequence[int]) -> Array:
        """``MiniLM.hidden_states`` under the encoder's (reentrant) lock: the pass writes every
        weight into the one ``_scratch``, so two threads' passes must not interleave."""
        with self._lock:
            return super().hidden_states(ids)

    def _gelu(self, x: Array) -> Array:
        """GELU's tanh form, x (1 + tanh(c (x + k x^3))) / 2, in float64 (ORT's graph computes
        the same: it has no float64 Erf)."""
        inner = x * x
        inner *= x
        inner *= TANH_K
        inner += x
        inner *= TANH_C
        np.tanh(inner, out=inner)
        inner += 1.0
        inner *= x
        inner *= 0.5
        return inner

    def _linear(self, x: Array, key: str, residual: Array | None = None) -> Array:
        """The int8 linear layer: the same float64 operations in the same order as its
        definition (module docstring), each into one output buffer (fast9): codes from a
        float32 copy of ``x`` (outlier channels zeroed by ``keep``), the exact integer product,
        times the two scales, plus the outlier channels' float product, the bias, the residual."""
        w = self._w
        keep = w.get(f"{key}.keep")
        x32 = np.empty(x.shape, dtype=np.float32)
        if keep is None:
            np.copyto(x32, x, casting="same_kind")
        else:  # x * keep in float64, then cast: a product by 0 or 1 is exact in either
            np.multiply(x, keep, out=x32, casting="same_kind")
        a, xs = _codes(x32)
        wt = self._widened(key)
        out = np.empty((x.shape[0], wt.shape[0]), dtype=np.float64)
        np.multiply(accumulate_t(a, wt).T, np.float64(xs) * w[f"{key}.scale"], out=out)
        if keep is not None:  # the outlier channels' float product
            out += x[:, w[f"{key}.oidx"]] @ w[f"{key}.orows"]
        out += w[f"{key}_b"]
        if residual is not None:
            out += residual
        return out


class OrtMiniLMQ8(OrtMiniLM):
    """The int8 definition on ONNX Runtime (one intra-op thread): ``minilm_ort``'s graph with
    the quantised linear layers (``minilm_ort.build_graph`` emits them for int8 weights) and
    its float parts in float64, as the reference computes them."""

    backend = "onnxruntime-q8"
    kind = "minilm-q8"
    precision = "float64"
    # ORT 1.32 fuses MatMulInteger -> Cast -> Mul into MatMulIntegerToFloat without checking
    # that the Cast is to float32, and then rejects its own graph (a float64 scale input).
    disabled_optimizers = ("MatMulIntegerToFloatFusion", "DynamicQuantizeMatMulFusion")

    def __init__(self, *, threads: int = 1, path: Any = None) -> None:
        super().__init__(threads=threads, path=path)
        self.dtype = np.dtype(np.float64)  # the unit embedding, as the reference's

    def pooled(self, ids: Sequence[int]) -> Array:
        """The mean of the last hidden states (float64), the embeddings summed as the
        reference sums them (float32 rows, added in float64)."""
        n = len(ids)
        emb = self._word[np.asarray(ids)].astype(np.float64)
        emb += self._pos[:n]
        emb += self._type0.astype(np.float64)
        out: Array = self._session.run(["pooled"], {"emb": emb})[0]
        return out

    def _graph_weights(self, raw: TensorFile, layers: int) -> dict[str, Array]:
        return float_weights(raw, layers, quantise_linear)
