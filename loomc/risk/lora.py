"""A LoRA delta merged into the packaged MiniLM at load, then quantised as ``minilm_q8`` does.

Why: a release whose MiniLM was fine-tuned (``research/finetune_minilm.py``: LoRA on query,
key, value and the dense layers) must serve without torch, with int8 numbers as defined as
v10's. So the delta ships as a small ``.npz`` (float32 ``<weight key>.A`` (r, in) and ``.B``
(out, r), and a ``meta`` with the base file's sha256, r and alpha) and our code merges it:
W' = W + (alpha / r) B A, computed in float64 from the stored float32 W and rounded once to
float32 (``merged``). The merged tensors are handed to ``minilm_q8``'s loaders in place of the
base file's (``MergedTensors``), so everything after (the quantiser, the outlier channels, the
float64 pass, the ORT graph) is v10's code unchanged, and the numpy reference and the ORT graph
agree as they do for the base model.

The delta names the base it was trained on; a different ``model.safetensors`` (another version
of the package) would merge into nonsense silently, so ``check_base`` compares sha256s first
and refuses with one line (``LoraError``, a ValueError, which ``make_profiler`` turns into a
settings error where a profiler builds the encoder). When the encoder loads, the 87 MB base
it reads is hashed, once per process and file (~0.07 s CPU); when a profiler is built, before
any prompt, ``loomc.risk.lora_base`` checks the same against the hash pip recorded at install,
without numpy or the 87 MB read.

Releases v12 and v13 ship one each, ``data/minilm-lora-v12.npz`` and ``-v13.npz``
(``releases.LORA``), by route12's and route16's pre-registered rules (evals/routing/README.md);
v14 ... v17 serve v13's files and delta, v18, v19 and v20 v13's delta under their own heads, v22
v19's heads over a delta of its own (``minilm-lora-v22.npz``, tuned on F44), v25
v22's files with the lexical floor, v26, v27, v28, v30 and v34 (v35, the default, serves v34's and asks v27),
v22's delta under heads of their own;
``research/loso_lora.py`` and ``train_router.py --encoder minilm-q8-lora`` use this too.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from loomc.risk.base import RiskSettingsError
from loomc.risk.lora_base import file_sha256 as file_sha256  # the one cached digest
from loomc.risk.minilm import TensorFile
from loomc.risk.minilm_q8 import MiniLMQ8, OrtMiniLMQ8

Array = npt.NDArray[Any]


class LoraError(RiskSettingsError):
    """A delta that cannot be merged into this base (one line, no traceback for users).

    A settings error (a ``LoomcError`` and a ``ValueError``): the installed MiniLM is not the
    one the release was tuned on. Raised when a profiler is built, or, for a base changed after
    it was installed (``loomc.risk.lora_base`` trusts pip's record at build), when the encoder
    loads on the first prompt MiniLM decides: ``loomc run`` then refuses before any model call,
    as for any ``LoomcError``."""


class Delta:
    """A LoRA delta file: ``factors[key] = (A, B)`` (float32) and its ``meta``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.read()

    def read(self) -> None:
        """(Re)read the file: its meta and factors (checked to pair)."""
        path = self.path
        try:
            with np.load(path, allow_pickle=False) as z:
                self.meta: dict[str, Any] = json.loads(str(z["meta"]))
                arrays = {k: np.asarray(z[k]) for k in z.files if k != "meta"}
            self.scale = float(self.meta["alpha"]) / float(self.meta["r"])
            self.factors = {
                k[: -len(".A")]: (arrays[k], arrays[k[: -len(".A")] + ".B"])
                for k in arrays
                if k.endswith(".A")
            }
            str(self.meta["base_sha256"])
        except (
            OSError,
            EOFError,
            zipfile.BadZipFile,
            ValueError,
            KeyError,
            TypeError,
            ZeroDivisionError,
        ) as exc:
            raise LoraError(f"{path.name}: not a LoRA delta file ({exc})") from None
        for key, (a, b) in self.factors.items():
            if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1]:
                raise LoraError(f"{path.name}: {key}: A {a.shape} and B {b.shape} do not pair")
        self.released = False

    def release(self) -> None:
        """Drop the factors once merged: an encoder merges once, at load, and they served no
        pass after (mem13: ~0.3 MiB of a v12 eval's peak). A later ``MergedTensors`` reads them
        from ``path`` again."""
        self.factors = {}
        self.released = True

    def check_base(self, model_file: Path) -> None:
        """Refuse a base file other than the one the delta was trained on."""
        want, got = str(self.meta["base_sha256"]), file_sha256(model_file)
        if want != got:
            raise LoraError(
                f"LoRA delta {self.path.name} was trained on another MiniLM "
                f"(base sha256 {want[:12]}..., installed {model_file.name} {got[:12]}...)"
            )


def merged(w: Array, a: Array, b: Array, scale: float) -> Array:
    """``w + scale * b @ a`` computed in float64, rounded once to ``w``'s dtype.

    In place on the product (scaled, then ``w`` added, widened exactly as it is read): the same
    float64 operations as ``np.float64(w) + scale * (b @ a)``, so the same numbers, without a
    float64 copy of ``w`` and a second temporary per weight (a third of the merge's time)."""
    out = np.asarray(b, dtype=np.float64) @ np.asarray(a, dtype=np.float64)
    out *= scale
    out += w
    return out.astype(w.dtype)


class MergedTensors:
    """A ``TensorFile`` whose adapted weights read as merged (what ``minilm_q8`` loads)."""

    def __init__(self, raw: TensorFile, delta: Delta) -> None:
        self.raw, self.delta, self.path = raw, delta, raw.path
        if delta.released:
            delta.read()

    def __getitem__(self, name: str) -> Array:
        w = self.raw[name]
        pair = self.delta.factors.get(name)
        if pair is None:
            return w
        a, b = pair
        if b.shape[0] != w.shape[0] or a.shape[1] != w.shape[1]:
            raise LoraError(f"{self.delta.path.name}: {name} is {w.shape}, the delta is not")
        return merged(w, a, b, self.delta.scale)


class MiniLMQ8Lora(MiniLMQ8):
    """The int8 definition (numpy reference) of the base merged with a LoRA delta."""

    backend = "numpy-q8"
    kind = "minilm-q8-lora"

    def __init__(self, delta: Path, *, threads: int = 1, path: Any = None) -> None:
        super().__init__(threads=threads, path=path)
        self.delta = Delta(delta)

    def _weights(self, raw: TensorFile, dt: np.dtype[Any]) -> dict[str, Array]:
        self.delta.check_base(raw.path)
        try:
            return super()._weights(MergedTensors(raw, self.delta), dt)  # type: ignore[arg-type]
        finally:
            self.delta.release()


class OrtMiniLMQ8Lora(OrtMiniLMQ8):
    """The same merged int8 model on ONNX Runtime (``minilm_q8``'s graph)."""

    backend = "onnxruntime-q8"
    kind = "minilm-q8-lora"

    def __init__(self, delta: Path, *, threads: int = 1, path: Any = None) -> None:
        super().__init__(threads=threads, path=path)
        self.delta = Delta(delta)

    def _graph_weights(self, raw: TensorFile, layers: int) -> dict[str, Array]:
        self.delta.check_base(raw.path)
        try:
            return super()._graph_weights(MergedTensors(raw, self.delta), layers)  # type: ignore[arg-type]
        finally:
            self.delta.release()
