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
- activations: per tensor, uint8 with a zero point, as ONNX's ``DynamicQuantizeLinear``
  defines it (``activations``): scale = (max(0, x) - min(0, x)) / 255 in float32, zero point
  and q rounded half to even and clipped to [0, 255].
- the product: the integer accumulator of (q_x - zero point) x q_w, scaled by the two scales
  (their product in float32, as ORT's Mul computes it), plus the float bias.
- outlier channels (``OUTLIERS``, fixed by ``research/calibrate_q8.py``): the few input
  channels of a layer whose values dwarf the rest (MiniLM's residual dimension 99 reaches ~30
  where the median channel stays under 2) are zeroed before quantising and multiplied in float
  (a (tokens x 1-4) by (1-4 x out) product) - LLM.int8()'s decomposition with a fixed set. With
  them in, a per-tensor step of ~0.12 put most FFN inputs on a handful of codes: the embedding
  was ~2e-2 from the float model's (cosine >= 0.985); without, ~1e-2 (>= 0.996), and ORT's
  graph stays closer to the reference (largest gap 2.4e-2 -> 7e-3, benchmarks/README.md q8).

Attention's two products (QK^T and PV), LayerNorm, softmax and GELU stay float, as in
``loomc.risk.minilm``. Two implementations of the one definition:

- ``MiniLMQ8`` (numpy, the reference, what training uses): the integer products are float32
  matmuls over integer values in chunks of at most ``EXACT_K`` terms, so every partial sum is an
  integer below 2^24 and exact in float32 whatever the BLAS's order (``accumulate``; the tests
  check it against int64), summed in float64; the rest in float64 as ``MiniLM("float64")``. So
  its embeddings are the same on every CPU and BLAS up to float64 rounding in the float parts.
- ``OrtMiniLMQ8`` (ONNX Runtime, what serving uses where it is installed): ``minilm_ort``'s graph
  with each linear layer as DynamicQuantizeLinear + MatMulInteger + Cast + Mul + Add (fused by
  ORT into DynamicQuantizeMatMul), float32 elsewhere. Its integers are exact too; it differs
  from the reference only where its float32 activations round to another uint8 than the
  reference's float64 ones. That is not rare: a float32/float64 difference of ~1e-7 crosses a
  rounding boundary somewhere in most passes, and the step it makes is of the int8 noise's own
  size, so over the corpus the embeddings differ by up to ~1e-2 and a few decisions near a
  threshold move (benchmarks/README.md, q8). Bit-equal codes would need ORT's float parts in
  float64 too; ORT 1.32 has no float64 Erf (GELU), so that was not built.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from loomc.risk.minilm import MiniLM, TensorFile
from loomc.risk.minilm_ort import OrtMiniLM
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
    # a row of subnormals whose scale underflows keeps the smallest scale float32 has
    scale[(scale == 0) & (amax > 0)] = np.nextafter(np.float32(0), np.float32(1))
    s64 = scale.astype(np.float64)
    safe = np.where(s64 > 0, s64, 1.0)[:, None]
    q = np.clip(np.rint(w64 / safe), -QMAX, QMAX).astype(np.int8)
    return q, scale


def activations(x: Array) -> tuple[npt.NDArray[np.float32], np.float32]:
    """``x`` quantised as DynamicQuantizeLinear defines it, returned as (q - zero point): float32
    integers in [-255, 255] (exact), with the float32 scale (0 for an all-zero ``x``)."""
    f = np.float32
    lo, hi = min(f(0), f(x.min())), max(f(0), f(x.max()))
    scale = f((hi - lo) / f(255))
    if scale == 0:
        return np.zeros(x.shape, dtype=np.float32), scale
    s64 = float(scale)
    zp = float(np.clip(np.rint(-float(lo) / s64), 0, 255))
    q = np.clip(np.rint(x / s64) + zp, 0, 255)
    q -= zp
    return q.astype(np.float32), scale


def accumulate(a: Array, wq: Array) -> npt.NDArray[np.float64]:
    """The integer product ``a @ wq`` (both float32 integer-valued: (q_x - zp) and q_w (in,
    out)), exact: float32 matmuls over chunks of at most ``EXACT_K`` rows of ``wq``, summed in
    float64 (every partial sum an integer below 2^24, so any summation order gives it)."""
    k = wq.shape[0]
    parts = max(1, math.ceil(k / EXACT_K))
    step = math.ceil(k / parts)
    acc = np.zeros((a.shape[0], wq.shape[1]), dtype=np.float64)
    for start in range(0, k, step):
        acc += a[:, start : start + step] @ wq[start : start + step]
    return acc


def quantised(
    w: dict[str, Array], layers: int, outliers: dict[str, tuple[int, ...]] | None = None
) -> dict[str, Array]:
    """``w`` (minilm_ort's float32 weights, linear ones (in, out)) with each Linear weight
    replaced in place by its int8 (in, out) and a ``<key>.scale`` (float32, per out column).

    ``outliers`` (default ``OUTLIERS``): input channels kept out of the int8 product: their
    weight rows stay float32 (``<key>.orows``, with ``<key>.oidx``) and are zeroed in the int8
    weight, and ``<key>.keep`` (1, 0 at those channels) zeroes them in the input before it is
    quantised, so they no longer set the step of every other channel."""
    table = OUTLIERS if outliers is None else outliers
    for i in range(layers):
        for name in LINEARS:
            key = f"{i}.{name}"
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
    return w


class MiniLMQ8(MiniLM):
    """The int8 definition in numpy (the reference): integer products exact, float64 elsewhere."""

    backend = "numpy-q8"  # what ``loomc doctor`` names
    kind = "minilm-q8"  # the encoder a router file's meta names (``encoder_kind``)

    def __init__(self, *, threads: int = 1, path: Any = None) -> None:
        super().__init__("float64", threads=threads, path=path)

    def _weights(self, raw: TensorFile, dt: np.dtype[Any]) -> dict[str, Array]:
        """Linear weights as float32 integers (in, out) with their scales; the rest in ``dt``.
        Converted one at a time from minilm_ort's float32 set (the peak is that set, ~42 MB)."""
        src = quantised(float_weights(raw, self.layers), self.layers)
        w: dict[str, Array] = {
            "pos": raw["embeddings.position_embeddings.weight"].astype(dt),
            "type0": raw["embeddings.token_type_embeddings.weight"][0].astype(dt),
        }
        for key in list(src):
            value = src.pop(key)
            if value.dtype == np.int8:
                w[key] = value.astype(np.float32)
            elif key.endswith((".scale", ".keep", ".oidx")):
                w[key] = value
            else:
                w[key] = value.astype(dt)
        return w

    def _linear(self, x: Array, key: str, residual: Array | None = None) -> Array:
        keep = self._w.get(f"{key}.keep")
        a, xs = activations(x if keep is None else x * keep)
        out = accumulate(a, self._w[key])
        out *= (xs * self._w[f"{key}.scale"]).astype(np.float64)  # float32 product, as ORT's Mul
        if keep is not None:  # the outlier channels' float product
            out += x[:, self._w[f"{key}.oidx"]] @ self._w[f"{key}.orows"]
        out += self._w[f"{key}_b"]
        if residual is not None:
            out += residual
        return out


class OrtMiniLMQ8(OrtMiniLM):
    """The int8 definition on ONNX Runtime (one intra-op thread): ``minilm_ort``'s graph with
    the quantised linear layers (``minilm_ort.build_graph`` emits them for int8 weights)."""

    backend = "onnxruntime-q8"
    kind = "minilm-q8"

    def _graph_weights(self, raw: TensorFile, layers: int) -> dict[str, Array]:
        return quantised(float_weights(raw, layers), layers)
