"""A router's train embeddings as a float32 ``.npy`` beside its ``.npz``: a cold run reads them
with no inflating and no float16 conversion.

Why: a cold ``loomc run`` profiles its one prompt in plain Python (``loomc.risk.pure``), and
before it can compare the prompt to the router's train prompts it must inflate their float16
embeddings from the ``.npz`` (2,352 × 384 for v11, ~5 ms) and widen them to float32 (~15 ms:
Python 3.11 has no float16 memoryview). v11's larger index made a cold run ~25 ms slower than
v8's. This file holds the same numbers already widened (float16 -> float32 is exact, so nothing
a router computes changes), stored uncompressed, so reading it is one ``read`` and a cast.

The copy is tied to the exact member it was made from: its name carries the CRC-32 that the
``.npz``'s zip directory records for ``train_emb`` (read without inflating anything), so a
retrained router never meets a stale copy; and a copy whose header is not float32 rows of the
member's size is ignored. Without a usable copy the member is read as before. Only the releases
a cold run is likely to load ship one (the default; ``tests/risk/test_emb32.py``): each costs
~3.6 MB of package data.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from loomc.risk.npz import NpzFormatError, member_entry, npy_header

MEMBER = "train_emb"


def _named(npz: Path, crc: int) -> Path:
    return npz.with_name(f"{npz.stem}.{MEMBER}-{crc:08x}.f32.npy")


def copy_path(npz: Path) -> Path | None:
    """Where the float32 copy of ``npz``'s current ``train_emb`` would be (``None`` when the
    archive cannot say: no such member, or not an archive this reader handles)."""
    try:
        crc, _size = member_entry(npz, MEMBER)
    except (OSError, NpzFormatError):
        return None
    return _named(npz, crc)


def read_copy(npz: Path) -> tuple[memoryview[Any], int, int] | None:
    """The copy's floats (flat, a float32 memoryview) with its rows and width; ``None`` when
    there is none for this exact member or it is not float32 rows holding as many numbers as the
    float16 member does (then the caller reads the member itself)."""
    if sys.byteorder != "little":
        return None
    try:
        crc, member_size = member_entry(npz, MEMBER)
        raw = _named(npz, crc).read_bytes()
        descr, shape, offset = npy_header(raw)
    except (OSError, NpzFormatError):
        return None
    if descr != "<f4" or len(shape) != 2:
        return None
    rows, dim = shape
    # The member is the same header (``<f2`` and ``<f4`` pad alike) and two bytes a number.
    if len(raw) - offset != 4 * rows * dim or member_size - offset != 2 * rows * dim:
        return None
    view: memoryview[Any] = memoryview(raw)[offset:].cast("f")
    return view, rows, dim


def write_copy(npz: Path) -> Path:
    """Write ``npz``'s float32 copy (removing copies of earlier members); returns its path.
    Numpy widens the member, exactly, as the numpy router does when it loads it."""
    import numpy as np

    path = copy_path(npz)
    if path is None:
        raise NpzFormatError(f"{npz.name}: no {MEMBER} member this reader can locate")
    with np.load(npz) as z:
        emb = np.ascontiguousarray(z[MEMBER], dtype="<f4")
    for old in npz.parent.glob(f"{npz.stem}.{MEMBER}-*.f32.npy"):
        old.unlink()
    np.save(path, emb, allow_pickle=False)
    return path
