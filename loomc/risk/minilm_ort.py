"""all-MiniLM-L6-v2 on ONNX Runtime: the same BERT forward pass as ``loomc.risk.minilm``, as a graph.

Why: issue 17 asks for a profiler that runs a prompt in 5 ms on one core; numpy's matmuls at
these small shapes (tokens x 384) reach only ~40 GFLOPS on one core through OpenBLAS, and they
are ~85 % of a pass. ONNX Runtime's MLAS kernels and fused operators (Gelu, LayerNorm, attention)
do the same arithmetic with fewer passes over memory.

No torch and no exported file: the graph is built as protobuf bytes at load time, in memory
(``loomc.risk.onnx_bytes``: without importing ``onnx``, whose import held ~11 MiB for good),
from the packaged ``model.safetensors`` (read as ``minilm.py`` reads it) and run with one intra-op
and one inter-op thread. The graph follows ``minilm.py`` operator by operator from the summed
embeddings (word + position + token type 0, gathered in numpy from the memory-mapped table as
``minilm.py`` does, so the 45 MB word table never enters the graph): LayerNorm; per layer one fused QKV MatMul, scaled dot-product
attention by MatMul/Softmax, the output projection plus residual and LayerNorm, the feed-forward
with the exact (erf) GELU, plus residual and LayerNorm; mean over the tokens. The L2 norm is
taken in numpy as ``minilm.py`` takes it. Prompts are encoded one at a time, unpadded, so an
embedding never depends on its batch. float32 throughout: the embedding differs from numpy's
float32 one only by summation order (~1e-7).

``onnxruntime`` is imported on ``load()`` only (the ``onnx`` extra); ``onnx`` only by a benchmark's
``quantize`` hook.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from loomc.risk import onnx_bytes as ob
from loomc.risk.minilm import (
    MAX_TOKENS,
    WORD,
    MiniLM,
    TensorFile,
    model_dir,
    positions,
    read_safetensors,
)

Array = npt.NDArray[Any]
OPSET = 17  # LayerNormalization is in the default domain from 17
IR_VERSION = 8
TANH_C, TANH_K = math.sqrt(2.0 / math.pi), 0.044715  # GELU's tanh form (float64 graphs)


def _weights(
    raw: TensorFile, layers: int, linear: Callable[[dict[str, Array], str], None] | None = None
) -> dict[str, Array]:
    """Every float32 weight the graph needs, linear weights transposed to (in, out), each made
    contiguous as it is read (so the set is never held twice). ``linear`` (``minilm_q8``) is
    called on each linear weight as soon as it is in ``w`` and may replace it (by its int8
    form): then no more than one float32 linear weight is held at a time."""
    w: dict[str, Array] = {}

    def put(key: str, value: Array, is_linear: bool = False) -> None:
        w[key] = np.ascontiguousarray(value, dtype=np.float32)
        if is_linear and linear is not None:
            linear(w, key)

    put("emb_ln.weight", raw["embeddings.LayerNorm.weight"])
    put("emb_ln.bias", raw["embeddings.LayerNorm.bias"])
    for i in range(layers):
        p = f"encoder.layer.{i}."
        a = p + "attention.self."
        names = ("query", "key", "value")
        put(f"{i}.qkv", np.concatenate([raw[f"{a}{n}.weight"] for n in names]).T, True)
        put(f"{i}.qkv_b", np.concatenate([raw[f"{a}{n}.bias"] for n in names]))
        for key, src in (
            ("attn_out", "attention.output.dense"),
            ("inter", "intermediate.dense"),
            ("out", "output.dense"),
        ):
            put(f"{i}.{key}", raw[f"{p}{src}.weight"].T, True)
            put(f"{i}.{key}_b", raw[f"{p}{src}.bias"])
        for key, src in (("ln1", "attention.output.LayerNorm"), ("ln2", "output.LayerNorm")):
            for name in ("weight", "bias"):
                put(f"{i}.{key}.{name}", raw[f"{p}{src}.{name}"])
    return w


def build_graph(
    w: dict[str, Array], heads: int, layers: int, eps: float, precision: str = "float32"
) -> Any:
    """The encoder as a serialised ONNX ModelProto (bytes): input ``emb`` ([n, 384], the summed word, position and
    token-type embeddings), output ``pooled`` ([384], the mean of the last hidden states, not
    yet normalised), both in ``precision``: float32, or float64 for the int8 model
    (``loomc.risk.minilm_q8``), whose float parts must match its numpy reference's; ORT has no
    float64 Erf, so that graph's GELU is the tanh form (the reference computes the same)."""
    ft = np.dtype(precision)
    tt = ob.DOUBLE if ft == np.float64 else ob.FLOAT
    nodes: list[bytes] = []
    inits = [ob.tensor(k, v.astype(ft) if v.dtype.kind == "f" else v) for k, v in w.items()]
    d = int(w["emb_ln.weight"].shape[0])
    hd = d // heads

    def const(name: str, value: Array) -> str:
        inits.append(ob.tensor(name, value))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(ob.node(op, inputs, [out], out, **attrs))
        return out

    split = const("split3", np.array([d, d, d], dtype=np.int64))
    heads_shape = const("heads_shape", np.array([0, heads, hd], dtype=np.int64))
    flat_shape = const("flat_shape", np.array([0, d], dtype=np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(hd), dtype=ft))
    one = const("one", np.array(1.0, dtype=ft))
    half = const("half", np.array(0.5, dtype=ft))
    # Only the GELU form the graph uses: ORT warns on stderr about every unused initializer.
    if tt == ob.DOUBLE:
        tanh_c = const("tanh_c", np.array(TANH_C, dtype=ft))
        tanh_k = const("tanh_k", np.array(TANH_K, dtype=ft))
    else:
        inv_sqrt2 = const("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), dtype=ft))

    def layer_norm(x: str, key: str, out: str) -> str:
        return node(
            "LayerNormalization", [x, f"{key}.weight", f"{key}.bias"], out, axis=-1, epsilon=eps
        )

    def linear(x: str, key: str, out: str) -> str:
        if f"{key}.scale" not in w:
            return node("Add", [node("MatMul", [x, key], out + ".mm"), f"{key}_b"], out)
        # int8 weights (loomc.risk.minilm_q8): the pattern ORT's quantize_dynamic writes, which
        # its optimiser fuses into one DynamicQuantizeMatMul: x to uint8 per tensor, an integer
        # product (int32), scaled by x's scale times the weight's per-column scale, plus bias.
        q, s, z = (f"{out}.{c}" for c in ("xq", "xs", "xz"))
        xin = x
        if f"{key}.keep" in w:  # outlier channels: zeroed here, their float product added below
            xin = node("Mul", [x, f"{key}.keep"], out + ".kept")
        if tt == ob.DOUBLE:  # DynamicQuantizeLinear reads float32
            xin = node("Cast", [xin], out + ".x32", to=ob.FLOAT)
        nodes.append(ob.node("DynamicQuantizeLinear", [xin], [q, s, z], out + ".dq"))
        acc = node("MatMulInteger", [q, key, z], out + ".mmi")
        real = node("Cast", [acc], out + ".acc", to=tt)
        if tt == ob.DOUBLE:
            s = node("Cast", [s], out + ".xs64", to=tt)
        scale = node("Mul", [s, f"{key}.scale"], out + ".scale")
        if f"{key}.keep" not in w:
            return node("Add", [node("Mul", [real, scale], out + ".mm"), f"{key}_b"], out)
        y = node("Add", [node("Mul", [real, scale], out + ".mm"), f"{key}_b"], out + ".q")
        xo = node("Gather", [x, f"{key}.oidx"], out + ".ox", axis=1)
        return node("Add", [y, node("MatMul", [xo, f"{key}.orows"], out + ".of")], out)

    x = layer_norm("emb", "emb_ln", "emb.ln")
    for i in range(layers):
        qkv = linear(x, f"{i}.qkv", f"l{i}.qkv")
        q, k, v = (f"l{i}.{c}" for c in "qkv")
        nodes.append(ob.node("Split", [qkv, split], [q, k, v], f"l{i}.split", axis=1))
        qh = node(
            "Transpose", [node("Reshape", [q, heads_shape], f"l{i}.qr")], f"l{i}.qh", perm=[1, 0, 2]
        )
        kh = node(
            "Transpose", [node("Reshape", [k, heads_shape], f"l{i}.kr")], f"l{i}.kh", perm=[1, 2, 0]
        )
        vh = node(
            "Transpose", [node("Reshape", [v, heads_shape], f"l{i}.vr")], f"l{i}.vh", perm=[1, 0, 2]
        )
        scores = node("Mul", [node("MatMul", [qh, kh], f"l{i}.qk"), scale], f"l{i}.scores")
        probs = node("Softmax", [scores], f"l{i}.probs", axis=-1)
        ctx = node(
            "Transpose", [node("MatMul", [probs, vh], f"l{i}.pv")], f"l{i}.ctxt", perm=[1, 0, 2]
        )
        ctx = node("Reshape", [ctx, flat_shape], f"l{i}.ctx")
        attn = node("Add", [linear(ctx, f"{i}.attn_out", f"l{i}.attn"), x], f"l{i}.res1")
        x = layer_norm(attn, f"{i}.ln1", f"l{i}.ln1")
        h = linear(x, f"{i}.inter", f"l{i}.inter")
        if tt == ob.DOUBLE:  # tanh GELU: x (1 + tanh(c (x + k x^3))) / 2
            cube = node("Mul", [node("Mul", [h, h], f"l{i}.h2"), h], f"l{i}.h3")
            inner = node("Add", [h, node("Mul", [cube, tanh_k], f"l{i}.kh3")], f"l{i}.gi")
            erf = node("Tanh", [node("Mul", [inner, tanh_c], f"l{i}.gs")], f"l{i}.erf")
        else:  # exact GELU, x * (1 + erf(x / sqrt 2)) / 2: ORT fuses this pattern into one Gelu op
            erf = node("Erf", [node("Mul", [h, inv_sqrt2], f"l{i}.gs")], f"l{i}.erf")
        g = node(
            "Mul",
            [node("Mul", [h, node("Add", [erf, one], f"l{i}.e1")], f"l{i}.gx"), half],
            f"l{i}.gelu",
        )
        out = node("Add", [linear(g, f"{i}.out", f"l{i}.out"), x], f"l{i}.res2")
        x = layer_norm(out, f"{i}.ln2", f"l{i}.ln2")
    node("ReduceMean", [x], "pooled", axes=[0], keepdims=0)
    return ob.model(
        nodes,
        "minilm",
        [ob.value_info("emb", tt, ["n", d])],
        [ob.value_info("pooled", tt, [d])],
        inits,
        OPSET,
        IR_VERSION,
    )


def session(model: Any, threads: int = 1, disabled: Sequence[str] = ()) -> Any:
    """An ORT session over ``model`` (serialised bytes, or a ModelProto): ``threads`` intra-op
    threads (0: ORT's default), one inter-op thread, sequential, every graph optimisation but
    ``disabled``."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(threads, 0)
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3  # errors only: ORT's warnings would reach a user's terminal
    # No arena and no memory pattern: with them the session keeps the buffers of the longest
    # prompt it has seen (256 tokens: +67 MiB over the loaded session, freed never); without,
    # a pass's buffers go back to malloc when it ends (the longest prompt: +24 MiB while it
    # runs) and a pass is no slower (fast9, benchmarks/README.md).
    opts.enable_cpu_mem_arena = False
    opts.enable_mem_pattern = False
    return ort.InferenceSession(
        model if isinstance(model, bytes) else model.SerializeToString(),
        opts,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=list(disabled) or None,
    )


class OrtMiniLM(MiniLM):
    """Sentence embeddings from the packaged all-MiniLM-L6-v2 on ONNX Runtime (float32): a
    ``MiniLM`` whose weights load into a session and whose ``pooled`` pass is that session's
    (loading once, tokenizing and normalising are ``MiniLM``'s).

    ``quantize`` (a callable ModelProto -> ModelProto) lets a benchmark run a quantised variant;
    it is not part of the profiler's options."""

    backend = "onnxruntime"  # what ``loomc doctor`` names
    precision = "float32"  # the graph's float parts (minilm_q8's graph: float64)
    disabled_optimizers: tuple[str, ...] = ()

    def __init__(self, *, threads: int = 1, path: Path | None = None, quantize: Any = None) -> None:
        # threads: ONNX Runtime's intra-op threads (0 lets it choose: every core), not BLAS's
        super().__init__("float32", threads=threads, path=path)
        self.quantize = quantize
        self._session: Any = None

    def _load(self) -> None:
        start = time.perf_counter()
        from loomc.risk.wordpiece import WordPiece

        path = self.path or model_dir()
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        heads, layers = int(config["num_attention_heads"]), int(config["num_hidden_layers"])
        self.hidden = int(config["hidden_size"])
        model_file = path / "model.safetensors"
        with TensorFile(model_file) as raw:
            w = self._graph_weights(raw, layers)
            self._pos = positions(raw)  # the rows a pass can read (MAX_TOKENS), float32
            self._type0 = np.array(raw["embeddings.token_type_embeddings.weight"][0])
        # The word table (45 MB) stays on the map, as in minilm.py: only a prompt's rows are read.
        self._word = read_safetensors(model_file)[WORD]
        model = build_graph(w, heads, layers, float(config["layer_norm_eps"]), self.precision)
        del w
        if self.quantize is not None:  # a benchmark's quantiser takes a ModelProto
            import onnx

            model = self.quantize(onnx.load_from_string(model))
        self._session = session(model, self.threads, self.disabled_optimizers)
        self._tokenizer = WordPiece(path / "vocab.txt", MAX_TOKENS)
        self.load_seconds = time.perf_counter() - start

    def _graph_weights(self, raw: TensorFile, layers: int) -> dict[str, Array]:
        """The weights the graph is built from (float32 here; ``minilm_q8`` quantises them)."""
        return _weights(raw, layers)

    def pooled(self, ids: Sequence[int]) -> Array:
        """The mean of the last hidden states of one unpadded sequence (not normalised)."""
        emb = self._word[np.asarray(ids)] + self._pos[: len(ids)] + self._type0
        out: Array = self._session.run(["pooled"], {"emb": emb})[0]
        return out
