"""``loomc.risk.onnx_bytes`` against ``onnx`` itself: every message it writes parses to, and
serialises back as, what ``onnx.helper`` / ``numpy_helper`` build from the same arguments; and
``minilm_ort.build_graph``'s bytes pass ONNX's checker with full shape inference.

Why: the encoders build their graph without importing ``onnx`` (fast9: ~11 MiB of RSS and a
second copy of the weights at load); a wrong field number or wire type would give a model ORT
rejects or, worse, reads differently. Needs the ``onnx`` extra (skipped without it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from needs import need

from loomc.risk import onnx_bytes as ob

names = st.text(max_size=12)
ints = st.integers(-(2**63), 2**63 - 1)
dtypes = st.sampled_from(sorted(ob.DTYPES, key=str))


@pytest.fixture(scope="module")
def onnx() -> Any:
    need("onnx")
    import onnx as module

    return module


@settings(max_examples=150, deadline=None)
@given(
    dtypes.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3))),
    names,
)
def test_tensor_is_numpy_helpers(onnx: Any, array: np.ndarray, name: str) -> None:
    from onnx import numpy_helper

    ours = b"".join(ob.tensor(name, array))
    theirs = numpy_helper.from_array(array, name=name)
    assert onnx.TensorProto.FromString(ours) == theirs
    assert ours == theirs.SerializeToString()
    back = numpy_helper.to_array(onnx.TensorProto.FromString(ours))
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.tobytes() == array.tobytes()  # bit for bit (NaNs included)


def test_tensor_of_a_strided_view_is_its_values(onnx: Any) -> None:
    from onnx import numpy_helper

    view = np.arange(24, dtype=np.float64).reshape(4, 6).T[::2]
    got = numpy_helper.to_array(onnx.TensorProto.FromString(b"".join(ob.tensor("v", view))))
    assert np.array_equal(got, view)


attrs = st.dictionaries(
    st.sampled_from(["axis", "epsilon", "to", "perm", "axes", "keepdims"]),
    st.one_of(ints, st.floats(width=32, allow_nan=False), st.lists(ints, min_size=1, max_size=4)),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(names, st.lists(names, max_size=3), st.lists(names, min_size=1, max_size=3), names, attrs)
def test_node_is_helpers(
    onnx: Any, op: str, inputs: list[str], outputs: list[str], name: str, kw: dict[str, Any]
) -> None:
    from onnx import helper

    ours = ob.node(op, inputs, outputs, name, **kw)
    theirs = helper.make_node(op, inputs, outputs, name=name, **kw)
    assert onnx.NodeProto.FromString(ours) == theirs
    assert ours == theirs.SerializeToString()


@pytest.mark.parametrize("bad", [True, "x", [1.5], [], None])
def test_node_refuses_an_attribute_it_cannot_write(bad: Any) -> None:
    with pytest.raises(TypeError):
        ob.node("Op", ["a"], ["b"], "n", axis=bad)


@settings(max_examples=100, deadline=None)
@given(
    names,
    st.sampled_from(sorted(ob.DTYPES.values())),
    st.lists(st.one_of(st.integers(0, 2**40), names), max_size=4),
)
def test_value_info_is_helpers(onnx: Any, name: str, elem: int, shape: list[Any]) -> None:
    from onnx import helper

    ours = ob.value_info(name, elem, shape)
    theirs = helper.make_tensor_value_info(name, elem, shape)
    assert onnx.ValueInfoProto.FromString(ours) == theirs
    assert ours == theirs.SerializeToString()


def test_model_is_helpers(onnx: Any) -> None:
    from onnx import helper, numpy_helper

    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours = ob.model(
        [ob.node("MatMul", ["x", "w"], ["y"], "mm")],
        "g",
        [ob.value_info("x", ob.FLOAT, ["n", 2])],
        [ob.value_info("y", ob.FLOAT, ["n", 3])],
        [ob.tensor("w", w)],
        17,
        8,
    )
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", ob.FLOAT, ["n", 2])],
        [helper.make_tensor_value_info("y", ob.FLOAT, ["n", 3])],
        [numpy_helper.from_array(w, name="w")],
    )
    theirs = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    theirs.ir_version = 8
    assert onnx.load_from_string(ours) == theirs
    assert ours == theirs.SerializeToString()


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_the_encoder_graph_passes_the_checker(onnx: Any, precision: str) -> None:
    from loomc.risk.minilm_ort import build_graph
    from loomc.risk.minilm_q8 import quantised

    rng = np.random.default_rng(0)
    d = 8
    w: dict[str, np.ndarray] = {"emb_ln.weight": np.ones(d, np.float32)}
    w["emb_ln.bias"] = np.zeros(d, np.float32)
    for key, (i, o) in {
        "qkv": (d, 3 * d),
        "attn_out": (d, d),
        "inter": (d, 32),
        "out": (32, d),
    }.items():
        w[f"0.{key}"] = rng.standard_normal((i, o)).astype(np.float32)
        w[f"0.{key}_b"] = np.zeros(o, np.float32)
    for key in ("ln1", "ln2"):
        w[f"0.{key}.weight"], w[f"0.{key}.bias"] = np.ones(d, np.float32), np.zeros(d, np.float32)
    if precision == "float64":
        w = quantised(w, 1, {"0.inter": (3,)})
    model = onnx.load_from_string(build_graph(w, 2, 1, 1e-12, precision))
    onnx.checker.check_model(model, full_check=True)
    assert [o.name for o in model.graph.output] == ["pooled"]
