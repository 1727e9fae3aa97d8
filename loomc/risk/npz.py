"""The members of a ``.npz`` file as raw bytes and their header, read without numpy.

Why: importing numpy costs ~120 ms of one core, a third of a cold ``loomc run``, and the static
stage of the semantic profiler needs none of numpy's machinery to profile one prompt (a gather,
a mean and ~650 dot products; ``loomc.risk.pure``). Its files are plain ``.npz`` archives: a zip
of ``.npy`` members, each a short header (a Python dict literal: ``descr``, ``fortran_order``,
``shape``) followed by the array's bytes in C order. That is all this module reads: the few
formats loomc ships (little-endian floats, int8, bool, fixed-width unicode), handed out as a
``memoryview`` cast to the item type, so nothing is copied that the caller does not touch.

A stored (uncompressed) member can be located instead of read: the 12 MB token table is one run
of bytes inside its archive, and a prompt reads only its tokens' rows. Anything this
reader does not understand (another dtype, Fortran order, a big-endian machine, a damaged
header) raises ``NpzFormatError``, and the caller falls back to numpy, which reads everything.
"""

from __future__ import annotations

import re
import struct
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

# descr -> memoryview format; "U" (fixed-width UCS-4 text) and "b1" (bool) are decoded instead.
_CASTS = {"<f8": "d", "<f4": "f", "|i1": "b", "|u1": "B", "<i8": "q", "<i4": "i"}
_HEADER = re.compile(
    r"\{'descr': '(?P<descr>[^']+)', 'fortran_order': (?P<fortran>True|False), "
    r"'shape': \((?P<shape>[0-9, ]*)\), \}\s*"
)
_TEXT = re.compile(r"<U([0-9]+)")


class NpzFormatError(ValueError):
    """A member this reader does not handle; numpy reads it instead."""


@dataclass(frozen=True)
class Member:
    """One array: its numpy ``descr``, its shape and its bytes in C order."""

    descr: str
    shape: tuple[int, ...]
    data: memoryview  # format "B"

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def view(self) -> memoryview[Any]:
        """The items, flat, as a memoryview of Python numbers (floats, ints)."""
        fmt = _CASTS.get(self.descr)
        if fmt is None or sys.byteorder != "little":
            raise NpzFormatError(f"dtype {self.descr!r} is not read without numpy")
        if len(self.data) != self.size * struct.calcsize(fmt):
            raise NpzFormatError("member's length is not what its header says")
        raw: Any = self.data  # typeshed's overloads lack some formats
        view: memoryview[Any] = raw.cast(fmt)
        return view

    def floats(self) -> Sequence[float]:
        """The items, flat, as Python floats (float16 too, which a memoryview cannot hold)."""
        if self.descr == "<f2":
            if len(self.data) != 2 * self.size:
                raise NpzFormatError("member shorter than its header says")
            return cast("tuple[float, ...]", struct.unpack(f"<{self.size}e", self.data))
        return cast("list[float]", self.view().tolist())

    def scalar(self) -> float:
        """A 0-d float array as a Python float."""
        if self.shape != () or self.descr != "<f8":
            raise NpzFormatError(f"not a float64 scalar: {self.descr} {self.shape}")
        return float(self.view()[0])

    def texts(self) -> list[str]:
        """A fixed-width unicode array's items (trailing NULs stripped, as numpy's ``str``)."""
        m = _TEXT.fullmatch(self.descr)
        if m is None:
            raise NpzFormatError(f"not a little-endian text array: {self.descr}")
        width = int(m.group(1)) * 4
        raw = bytes(self.data)
        if len(raw) != self.size * width:
            raise NpzFormatError("member shorter than its header says")
        return [
            raw[i : i + width].decode("utf-32-le").rstrip("\x00") for i in range(0, len(raw), width)
        ]

    def bools(self) -> list[bool]:
        if self.descr != "|b1" or len(self.data) != self.size:
            raise NpzFormatError(f"not a bool array: {self.descr}")
        return [b != 0 for b in self.data]


def _parse(raw: bytes | memoryview) -> tuple[str, tuple[int, ...], int]:
    """(descr, shape, offset of the data) from the start of a ``.npy`` member."""
    head = bytes(raw[:12])
    if len(head) < 12 or head[:6] != b"\x93NUMPY":
        raise NpzFormatError("not an .npy member")
    major = head[6]
    if major == 1:
        (length,) = struct.unpack("<H", head[8:10])
        start = 10
    elif major in (2, 3):
        (length,) = struct.unpack("<I", head[8:12])
        start = 12
    else:
        raise NpzFormatError(f".npy version {major} is not read without numpy")
    if start + length > len(raw):
        raise NpzFormatError("truncated .npy header")
    text = bytes(raw[start : start + length]).decode("latin-1")
    m = _HEADER.fullmatch(text)
    if m is None or m.group("fortran") != "False":
        raise NpzFormatError("an .npy header this reader does not handle")
    shape = tuple(int(d) for d in m.group("shape").replace(" ", "").split(",") if d)
    return m.group("descr"), shape, start + length


def read_members(path: Path, names: tuple[str, ...] = ()) -> dict[str, Member]:
    """The members ``names`` of the archive at ``path`` (every member when empty), read whole
    (deflated ones decompressed by zipfile)."""
    out: dict[str, Member] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                name = info.filename.removesuffix(".npy")
                if names and name not in names:
                    continue
                raw = zf.read(info)
                descr, shape, offset = _parse(raw)
                out[name] = Member(descr, shape, memoryview(raw)[offset:])
    except (zipfile.BadZipFile, EOFError, NotImplementedError) as exc:  # e.g. bz2 members
        raise NpzFormatError(f"{path.name}: {exc}") from exc
    missing = set(names) - set(out)
    if missing:
        raise NpzFormatError(f"{path.name} has no member {sorted(missing)[0]!r}")
    return out


def locate_member(path: Path, name: str) -> tuple[str, tuple[int, ...], int]:
    """(descr, shape, offset in the file of its first byte) of the stored member ``name``: a
    caller reads the rows it needs from there (a prompt reads its tokens' rows only, not the
    12 MB table). A compressed member raises."""
    try:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(f"{name}.npy")
    except (zipfile.BadZipFile, KeyError) as exc:
        raise NpzFormatError(f"{path.name}: {exc}") from exc
    if info.compress_type != zipfile.ZIP_STORED:
        raise NpzFormatError(f"{name} is compressed in {path.name}")
    with path.open("rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise NpzFormatError(f"{path.name}: damaged local header")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        begin = info.header_offset + 30 + name_len + extra_len
        fh.seek(begin)
        head = fh.read(min(info.file_size, 65_536))
    descr, shape, offset = _parse(head)
    itemsize = struct.calcsize(_CASTS.get(descr, "x"))
    member = Member(descr, shape, memoryview(b""))
    if descr not in _CASTS or offset + member.size * itemsize != info.file_size:
        raise NpzFormatError(f"{name} in {path.name}: not a plain array of its header's size")
    return descr, shape, begin + offset
