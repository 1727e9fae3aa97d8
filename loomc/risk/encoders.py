"""One encoder of each kind per process, shared by every semantic profiler.

``make_profiler`` runs once per run, so a profiler must not own its encoder: the token table
and MiniLM's weights are read once per process (and per MiniLM folder, dtype and BLAS thread
count) and every profiler built afterwards reuses them. Both tokenizers share one vocabulary
(``loomc.risk.wordpiece.load_vocabulary``).
"""

from __future__ import annotations

import threading
from pathlib import Path

from loomc.risk.minilm import MiniLM
from loomc.risk.static import TABLE_FILE, StaticEncoder

_ENCODERS: dict[tuple[Path, str, int], MiniLM] = {}
_STATIC: dict[Path, StaticEncoder] = {}
_ENCODERS_LOCK = threading.Lock()


def shared_encoder(path: Path, dtype: str, threads: int) -> MiniLM:
    """The process's encoder for the weights in ``path`` at this dtype and BLAS thread count
    (weights are read once, on its first prompt)."""
    with _ENCODERS_LOCK:
        enc = _ENCODERS.get((path, dtype, threads))
        if enc is None:
            enc = _ENCODERS[(path, dtype, threads)] = MiniLM(dtype, threads=threads, path=path)
        return enc


def shared_static(table: Path = TABLE_FILE) -> StaticEncoder:
    """The process's static encoder for this table (read once)."""
    with _ENCODERS_LOCK:
        enc = _STATIC.get(table)
        if enc is None:
            enc = _STATIC[table] = StaticEncoder(table)
        return enc
