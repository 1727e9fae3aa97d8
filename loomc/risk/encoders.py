"""One encoder of each kind, and one router per file, per process, shared by every semantic
profiler.

``make_profiler`` runs once per run, so a profiler must not own its encoder: the token table
and MiniLM's weights are read once per process (and per MiniLM folder, dtype, BLAS thread
count and backend) and every profiler built afterwards reuses them. Both tokenizers share one
vocabulary (``loomc.risk.wordpiece.load_vocabulary``).

MiniLM's backend (``risk.options.backend``): ``numpy`` (``loomc.risk.minilm``), ``onnxruntime``
(``loomc.risk.minilm_ort``: the same float32 pass, ~2x faster on one core, the same decisions on
every corpus prompt; the ``onnx`` extra) or ``auto``: ONNX Runtime when it and ``onnx`` are
installed and the dtype is float32, else numpy (``loomc.risk.releases.backend_of``, which asks
``importlib`` without importing: ``loomc run`` imports onnxruntime only when MiniLM runs).
The default is ``numpy``: an ONNX Runtime session holds ~200 MB more than numpy's pass (the
graph's weights copied and prepacked, the library), which an eval's 150 MiB budget cannot carry;
a server that wants the faster pass names ``auto`` or ``onnxruntime``.
"""

from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from loomc.risk.minilm import MiniLM
from loomc.risk.static import TABLE_FILE, StaticEncoder

if TYPE_CHECKING:
    from loomc.risk.router import RouterWeights

MiniLMEncoder: TypeAlias = MiniLM  # loomc.risk.minilm_ort.OrtMiniLM is one too

_ENCODERS: dict[tuple[Path, str, int, str, str, Path | None], MiniLMEncoder] = {}
_STATIC: dict[Path, StaticEncoder] = {}
_ENCODERS_LOCK = threading.Lock()
_ROUTERS: weakref.WeakValueDictionary[tuple[Any, ...], RouterWeights] = (
    weakref.WeakValueDictionary()
)


def shared_encoder(
    path: Path,
    dtype: str,
    threads: int,
    backend: str = "numpy",
    kind: str = "minilm",
    delta: Path | None = None,
) -> MiniLMEncoder:
    """The process's encoder for the weights in ``path`` at this dtype, thread count, resolved
    backend and kind (``minilm``, or ``minilm-q8``: ``loomc.risk.minilm_q8``, whose one
    precision ignores ``dtype``, or ``minilm-q8-lora``: the same with the LoRA ``delta`` merged,
    ``loomc.risk.lora``); weights are read once, on its first prompt."""
    with _ENCODERS_LOCK:
        key = (path, dtype, threads, backend, kind, delta)
        enc = _ENCODERS.get(key)
        if enc is None:
            if kind == "minilm-q8-lora":
                from loomc.risk.lora import MiniLMQ8Lora, OrtMiniLMQ8Lora

                assert delta is not None  # releases.LORA names one for every such release
                lora = OrtMiniLMQ8Lora if backend == "onnxruntime" else MiniLMQ8Lora
                enc = lora(delta, threads=threads, path=path)
            elif kind == "minilm-q8":
                from loomc.risk.minilm_q8 import MiniLMQ8, OrtMiniLMQ8

                q8 = OrtMiniLMQ8 if backend == "onnxruntime" else MiniLMQ8
                enc = q8(threads=threads, path=path)
            elif backend == "onnxruntime":
                from loomc.risk.minilm_ort import OrtMiniLM

                enc = OrtMiniLM(threads=threads, path=path)
            else:
                enc = MiniLM(dtype, threads=threads, path=path)
            _ENCODERS[key] = enc
        return enc


def shared_static(table: Path = TABLE_FILE) -> StaticEncoder:
    """The process's static encoder for this table (read once)."""
    with _ENCODERS_LOCK:
        enc = _STATIC.get(table)
        if enc is None:
            enc = _STATIC[table] = StaticEncoder(table)
        return enc


def static_embedding(text: str) -> list[float]:
    """The shipped static encoder's embedding of one text: what the context block of
    semantic-v19 and -v20 (``loomc.risk.context``) reads in every stage, whichever encoder the stage
    itself embeds prompts with, in serving and in training alike."""
    return [float(v) for v in shared_static().encode([text])[0]]


def shared_router(path: Path, prefix_of: RouterWeights | None = None) -> RouterWeights:
    """The router in ``path`` (a release's first or second stage), read once while any profiler
    holds it.

    Why: an eval builds two profilers of the same release (the policy's, and the semantic one its
    planners read), and each read its own copy of the router: the train embeddings alone are
    ~3.9 MB for v12, ~4% of the profiler's share of an eval's peak RSS. A ``RouterWeights`` is
    frozen and only read, so sharing it changes no number. Keyed by the file's size and mtime
    as well, so a file rewritten in place (research, tests) is read again; held weakly, so it
    goes when its last profiler does.

    ``prefix_of``: a router whose train embeddings may begin with this one's
    (``RouterWeights.sharing_rows``): where they do, the router returned reads them from it.
    Kept apart from the plain one, keyed by the other's index, so a profiler of the release alone
    reads its own file's copy as before."""
    from loomc.risk.router import RouterWeights

    st = path.stat()
    plain: tuple[Any, ...] = (path.resolve(), st.st_size, st.st_mtime_ns)
    # the view keeps that index alive, so its id stays its own while the entry lives
    key = plain if prefix_of is None else (*plain, id(prefix_of.train_emb))
    with _ENCODERS_LOCK:
        router = _ROUTERS.get(key)
        if router is None:
            router = _ROUTERS.get(plain) or RouterWeights.load(path)  # the file read once
            if prefix_of is not None:
                router = router.sharing_rows(prefix_of)
            _ROUTERS[key] = router
        return router
