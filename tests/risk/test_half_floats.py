"""Float16 read without ``struct`` (``loomc.risk.npz.half_as_single``): every one of the 65,536
bit patterns gives the number ``struct`` (and numpy) gives, sign of zero and NaN included, and
the shipped train embeddings read the same either way."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest

from loomc.risk.files import DATA
from loomc.risk.npz import half_as_single, read_members


def _same(a: float, b: float) -> bool:
    if math.isnan(a):
        return math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def test_every_float16_bit_pattern() -> None:
    raw = struct.pack("<65536H", *range(65536))
    expected = struct.unpack("<65536e", raw)
    got = half_as_single(memoryview(raw)).tolist()
    assert len(got) == 65536
    assert [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if not _same(a, b)] == []


@pytest.mark.parametrize("path", sorted(DATA.glob("router-*.npz")), ids=lambda p: p.name)
def test_the_shipped_embeddings(path: Path) -> None:
    member = read_members(path, ("train_emb",))["train_emb"]
    assert member.descr == "<f2"
    expected = struct.unpack(f"<{member.size}e", member.data)
    assert list(member.floats()) == list(expected)
