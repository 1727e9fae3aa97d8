"""Static sentence embeddings distilled from all-MiniLM-L6-v2: a prompt in ~0.1 ms, no layers.

Why: the numpy MiniLM forward pass costs ~15-50 ms of one core per prompt (six layers over every
token; the matmuls are too small for BLAS to run near peak), ten times the profiler's budget.
``research/build_static.py`` runs every vocabulary token through that same encoder once, alone
between ``[CLS]`` and ``[SEP]``, in float64 (model2vec's recipe), and keeps the mean-pooled
outputs as int8 with one float64 scale per token. Here a prompt's embedding is the
mean of its WordPiece tokens' rows, L2-normalised: a gather and a sum, in float64, so the numbers
are identical on every CPU and the router trained on them (``research/train_router.py``) makes the
same decisions everywhere. Word order and context are lost; the router's keyword and cue features
and the nearest train prompts carry what the embedding no longer does.

The table (``data/static-minilm.npz``, 12 MB) and the tokenizer's vocabulary
(``data/minilm-vocab.txt``, MiniLM's ``vocab.txt`` copied verbatim, 232 KB, Apache-2.0: see
NOTICE) ship with loomc, so this stage needs numpy and nothing else: no model package, no
weights. The table records the vocabulary's sha256 and ``load`` refuses another.

Loading is a memory map, not a read: the ``.npz`` is an uncompressed zip, so the int8 table is
one contiguous run of bytes inside it, and mapping that run costs ~nothing at start-up (a cold
``loomc run`` reads the table before its first call); a prompt touches only its tokens' rows.
The bytes are the file's own, so every embedding is bit-identical to reading the array whole.
"""

from __future__ import annotations

import json
import mmap
import struct
import threading
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from loomc.risk.files import STATIC_MAX_TOKENS as MAX_TOKENS
from loomc.risk.files import TABLE_FILE as TABLE_FILE
from loomc.risk.files import VOCAB_FILE as VOCAB_FILE

Array = npt.NDArray[Any]


def mapped_member(path: Path, name: str) -> Array | None:
    """The array ``name`` of the ``.npz`` at ``path``, memory-mapped read-only, or None where the
    member is compressed or not a plain C/Fortran array (the caller then reads it whole)."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    with path.open("rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            return None
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            return None
        if dtype.hasobject:
            return None
        offset = fh.tell()
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if offset + size > info.header_offset + 30 + name_len + extra_len + info.file_size:
            return None
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    flat = np.frombuffer(mapped, dtype=dtype, count=size // dtype.itemsize, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C")


class StaticEncoder:
    """``encode(texts)`` -> L2-normalised mean of the tokens' static vectors (float64)."""

    dtype = np.dtype(np.float64)
    threads = 0  # no BLAS call worth capping

    def __init__(self, table: Path | None = None, vocab: Path | None = None) -> None:
        self.table_path = table or TABLE_FILE
        self.vocab_path = vocab or VOCAB_FILE
        self.load_seconds: float | None = None
        self._tokenizer: Any = None
        self._table: Array = np.empty((0, 0), dtype=np.int8)
        self._scale: Array = np.empty(0)
        self._lock = threading.Lock()

    def load(self) -> None:
        if self._tokenizer is not None:
            return
        with self._lock:
            if self._tokenizer is None:
                self._load()

    def _load(self) -> None:
        start = time.perf_counter()
        from loomc.risk.wordpiece import WordPiece, load_vocabulary

        vocab = load_vocabulary(self.vocab_path)
        with np.load(self.table_path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            scale = z["scale"]
            q = mapped_member(self.table_path, "table")
            if q is None:
                q = z["table"]
        if meta.get("vocab_sha256") != vocab.sha256:
            raise OSError(
                f"{self.table_path.name} was built from another vocabulary than {self.vocab_path}"
            )
        # Kept as int8 (12 MB, not 94 MB of float64): only a prompt's rows are dequantised.
        self._table, self._scale = q, scale.astype(np.float64)
        self._tokenizer = WordPiece(vocab, MAX_TOKENS)
        self.load_seconds = time.perf_counter() - start

    @property
    def dim(self) -> int:
        self.load()
        return int(self._table.shape[1])

    def token_ids(self, text: str) -> list[int]:
        """WordPiece ids without ``[CLS]``/``[SEP]``; ``[UNK]`` alone for an empty prompt."""
        self.load()
        ids: list[int] = self._tokenizer.encode(text)[1:-1]
        return ids or [int(self._tokenizer.unk)]

    def encode(self, texts: Sequence[str]) -> Array:
        self.load()
        out = np.empty((len(texts), self._table.shape[1]), dtype=np.float64)
        for row, text in enumerate(texts):
            ids = self.token_ids(text)
            vec = (self._table[ids] * self._scale[ids, None]).mean(axis=0)
            out[row] = vec / max(float(np.sqrt(vec @ vec)), 1e-12)
        return out
