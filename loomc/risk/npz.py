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
The archive itself is read here too (its central directory, stored and deflated members), not
with ``zipfile``, whose import alone cost ~3 ms of a cold run.
"""

from __future__ import annotations

import re
import struct
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

# descr -> memoryview format; "U" (fixed-width UCS-4 text) and "b1" (bool) are decoded instead.
_CASTS = {"<f8": "d", "<f4": "f", "|i1": "b", "|u1": "B", "<i8": "q", "<i4": "i"}
_HEADER = re.compile(
    r"\{'descr': '(?P<descr>[^']+)', 'fortran_order': (?P<fortran>True|False), "
    r"'shape': \((?P<shape>[0-9, ]*)\), \}\s*"
)
_TEXT = re.compile(r"<U([0-9]+)")


class NpzFormatError(ValueError):
    """A member this reader does not handle; numpy reads it instead."""


class Member:
    """One array: its numpy ``descr``, its shape and its bytes in C order (format ``B``).

    A plain class: a dataclass costs ~0.5 ms to create at import, in every cold run."""

    __slots__ = ("data", "descr", "shape")

    def __init__(self, descr: str, shape: tuple[int, ...], data: memoryview) -> None:
        self.descr, self.shape, self.data = descr, shape, data

    def __repr__(self) -> str:
        return f"Member({self.descr!r}, {self.shape!r}, {len(self.data)} bytes)"

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
        """The items, flat, as Python floats. Float16 items come as a float32 memoryview (each
        float16 is a float32 exactly; a float is made only when an item is read)."""
        if self.descr == "<f2":
            if sys.byteorder != "little":
                raise NpzFormatError("float16 is not read without numpy on this machine")
            if len(self.data) != 2 * self.size:
                raise NpzFormatError("member shorter than its header says")
            return half_as_single(self.data)
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
        chars = int(m.group(1))
        if chars == 0:
            return [""] * self.size
        if len(self.data) != self.size * chars * 4:
            raise NpzFormatError("member shorter than its header says")
        try:  # one decode, then cut (~1,300 item decodes cost ~1.5 ms of a cold run)
            text = str(self.data, "utf-32-le")
        except UnicodeDecodeError as exc:
            raise NpzFormatError(f"not UTF-32 text: {exc}") from exc
        return [text[i : i + chars].rstrip("\x00") for i in range(0, len(text), chars)]

    def bools(self) -> list[bool]:
        if self.descr != "|b1" or len(self.data) != self.size:
            raise NpzFormatError(f"not a bool array: {self.descr}")
        return [b != 0 for b in self.data]


def npy_header(raw: bytes | memoryview) -> tuple[str, tuple[int, ...], int]:
    """(descr, shape, offset of the data) from the start of a ``.npy`` member or file."""
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


def _half_tables() -> tuple[bytes, ...]:
    """Byte tables from a float16's high / low byte to bytes of the same float32, right for
    normal numbers and zeros; and flags of the high bytes of the others (see below)."""
    top, mid_hi, mid_lo, low, special, maybe, nonzero = [], [], [], [], [], [], []
    for b in range(256):
        exponent = (b >> 2) & 0x1F  # for b as a high byte: sign, 5 exponent bits, 2 mantissa
        e32 = exponent + 112 if exponent else 0
        top.append((b & 0x80) | e32 >> 1)
        mid_hi.append((e32 & 1) << 7 | (b & 3) << 5)
        special.append(exponent == 31 or (exponent == 0 and b & 3 != 0))  # inf, NaN, subnormal
        maybe.append(exponent == 0 and b & 3 == 0)  # zero, or a subnormal if the low byte is not
        mid_lo.append(b >> 3)  # for b as a low byte: the mantissa's low 8 bits
        low.append((b & 7) << 5)
        nonzero.append(b != 0)
    return (
        bytes(top),
        bytes(mid_hi),
        bytes(mid_lo),
        bytes(low),
        *map(bytes, (special, maybe, nonzero)),
    )


_HALF: list[tuple[bytes, ...]] = []


def _int(b: bytes) -> int:
    return int.from_bytes(b, "little")


def half_as_single(data: memoryview) -> memoryview[Any]:
    """Little-endian float16 bytes as a memoryview of the same numbers in float32.

    Why: ``struct`` is Python 3.11's only float16 reader, and unpacking the 650×384 train
    embeddings with it cost ~7 ms of a cold run (Python 3.12 casts a memoryview to ``e``, used
    where it can). A float16 ``s eeeee mmmmmmmmmm`` is the float32 ``s (e+112) m<<13``: its
    four bytes come from byte tables over the float16's two bytes (the one byte fed by both
    is two tables' disjoint bits, or-ed as one big integer) and are interleaved by slicing.
    Subnormals (exponent 0, mantissa not 0), infinities and NaNs (exponent 31), ~0.1 % of the
    embeddings, are written one by one with ``struct``."""
    raw: Any = data
    try:
        view: memoryview[Any] = raw.cast("e")
        return view
    except (ValueError, TypeError):  # Python < 3.12
        pass
    if not _HALF:
        _HALF.append(_half_tables())
    top, mid_hi, mid_lo, low, special, maybe, nonzero = _HALF[0]
    whole = bytes(data)
    lo, hi = whole[0::2], whole[1::2]
    n = len(hi)
    out = bytearray(4 * n)
    out[3::4] = hi.translate(top)
    out[2::4] = (_int(hi.translate(mid_hi)) | _int(lo.translate(mid_lo))).to_bytes(n, "little")
    out[1::4] = lo.translate(low)
    odd = _int(hi.translate(special)) | _int(hi.translate(maybe)) & _int(lo.translate(nonzero))
    if odd:
        flags = odd.to_bytes(n, "little")
        i = flags.find(1)
        while i >= 0:
            struct.pack_into("<f", out, 4 * i, struct.unpack_from("<e", whole, 2 * i)[0])
            i = flags.find(1, i + 1)
    single: memoryview[Any] = memoryview(out).cast("f")
    return single


class _Entry(NamedTuple):
    """A member as the archive's central directory describes it."""

    name: bytes
    flags: int
    method: int  # 0 stored, 8 deflated
    crc: int
    compressed: int
    size: int
    local: int  # offset of its local header


_STORED, _DEFLATED = 0, 8
_CENTRAL = struct.Struct("<4s4xHH4xIIIHHH8xI")  # 46 bytes: what _Entry keeps
_END = struct.Struct("<4sHHHHIIH")  # 22 bytes, then the archive's comment


def _directory(fh: IO[bytes], name: str) -> dict[str, _Entry]:
    """The members of the zip archive open in ``fh``, by name (``.npy`` cut), later ones winning
    as in ``zipfile``'s listing. Why not ``zipfile``: importing it (with ``shutil``, ``bz2``,
    ``lzma``) costs ~3 ms of a cold run, which reads stored and deflated members only. Anything
    else (ZIP64 fields, several disks, encryption, another compression) is ``NpzFormatError``."""
    size = fh.seek(0, 2)
    tail_size = min(size, _END.size + 0xFFFF)
    fh.seek(size - tail_size)
    tail = fh.read(tail_size)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _END.size:
        raise NpzFormatError(f"{name}: not a zip archive")
    _sig, disk, cd_disk, here, count, cd_size, cd_offset, _comment = _END.unpack_from(tail, at)
    if disk or cd_disk or here != count or 0xFFFFFFFF in (cd_size, cd_offset):
        raise NpzFormatError(f"{name}: a multi-disk or ZIP64 archive")
    if cd_offset + cd_size > size - tail_size + at:
        raise NpzFormatError(f"{name}: damaged central directory")
    fh.seek(cd_offset)
    cd = fh.read(cd_size)
    out: dict[str, _Entry] = {}
    pos = 0
    for _ in range(count):
        if pos + _CENTRAL.size > len(cd):
            raise NpzFormatError(f"{name}: damaged central directory")
        sig, flags, method, crc, csize, usize, n, extra, comment, local = _CENTRAL.unpack_from(
            cd, pos
        )
        raw = cd[pos + _CENTRAL.size : pos + _CENTRAL.size + n]
        pos += _CENTRAL.size + n + extra + comment
        if sig != b"PK\x01\x02" or len(raw) != n or pos > len(cd):
            raise NpzFormatError(f"{name}: damaged central directory")
        if flags & 0x1 or method not in (_STORED, _DEFLATED) or 0xFFFFFFFF in (csize, usize, local):
            raise NpzFormatError(f"{name}: an encrypted, ZIP64 or otherwise compressed member")
        try:  # as zipfile names it (ASCII first: cp437 is one more codec module to import)
            text = raw.decode("ascii" if raw.isascii() else "utf-8" if flags & 0x800 else "cp437")
        except UnicodeDecodeError as exc:
            raise NpzFormatError(f"{name}: a member's name is not UTF-8") from exc
        out[text.removesuffix(".npy")] = _Entry(raw, flags, method, crc, csize, usize, local)
    return out


def _data_offset(fh: IO[bytes], entry: _Entry, name: str) -> int:
    """Where ``entry``'s bytes begin: after its local header, which must name it too."""
    fh.seek(entry.local)
    local = fh.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise NpzFormatError(f"{name}: damaged local header")
    n, extra = struct.unpack_from("<HH", local, 26)
    if fh.read(n) != entry.name:
        raise NpzFormatError(f"{name}: a local header names another member")
    return int(entry.local + 30 + n + extra)


def _read(fh: IO[bytes], entry: _Entry, name: str) -> bytes:
    """A member's bytes, decompressed, checked against its size and CRC-32 (as zipfile does)."""
    fh.seek(_data_offset(fh, entry, name))
    raw = fh.read(entry.compressed)
    if len(raw) != entry.compressed:
        raise NpzFormatError(f"{name}: truncated member")
    if entry.method == _DEFLATED:
        try:
            raw = zlib.decompress(raw, -15)
        except zlib.error as exc:
            raise NpzFormatError(f"{name}: {exc}") from exc
    if len(raw) != entry.size or zlib.crc32(raw) != entry.crc:
        raise NpzFormatError(f"{name}: a member fails its size or CRC check")
    return raw


def read_members(
    path: Path, names: tuple[str, ...] = (), skip: tuple[str, ...] = ()
) -> dict[str, Member]:
    """The members ``names`` of the archive at ``path`` (every member but ``skip`` when empty),
    read whole (deflated ones decompressed)."""
    out: dict[str, Member] = {}
    with path.open("rb") as fh:
        entries = _directory(fh, path.name)
        for name, entry in entries.items():
            if (names and name not in names) or name in skip:
                continue
            raw = _read(fh, entry, path.name)
            descr, shape, offset = npy_header(raw)
            out[name] = Member(descr, shape, memoryview(raw)[offset:])
    missing = set(names) - set(out)
    if missing:
        raise NpzFormatError(f"{path.name} has no member {sorted(missing)[0]!r}")
    return out


def member_entry(path: Path, name: str) -> tuple[int, int]:
    """(CRC-32, uncompressed size) the archive's directory records for member ``name``, read
    without inflating anything: what ties a derived copy of a member to the exact bytes it was
    made from."""
    with path.open("rb") as fh:
        entry = _directory(fh, path.name).get(name)
    if entry is None:
        raise NpzFormatError(f"{path.name} has no member {name!r}")
    return entry.crc, entry.size


def locate_member(path: Path, name: str) -> tuple[str, tuple[int, ...], int]:
    """(descr, shape, offset in the file of its first byte) of the stored member ``name``: a
    caller reads the rows it needs from there (a prompt reads its tokens' rows only, not the
    12 MB table). A compressed member raises."""
    with path.open("rb") as fh:
        entry = _directory(fh, path.name).get(name)
        if entry is None:
            raise NpzFormatError(f"{path.name} has no member {name!r}")
        if entry.method != _STORED:
            raise NpzFormatError(f"{name} is compressed in {path.name}")
        begin = _data_offset(fh, entry, path.name)
        fh.seek(begin)
        head = fh.read(min(entry.size, 65_536))
    descr, shape, offset = npy_header(head)
    itemsize = struct.calcsize(_CASTS.get(descr, "x"))
    member = Member(descr, shape, memoryview(b""))
    if descr not in _CASTS or offset + member.size * itemsize != entry.size:
        raise NpzFormatError(f"{name} in {path.name}: not a plain array of its header's size")
    return descr, shape, begin + offset


def member_names(path: Path) -> frozenset[str]:
    """The names of the archive's members (``.npy`` cut), from its central directory alone:
    nothing is inflated, so ``loomc check`` can say what a file is without numpy."""
    with path.open("rb") as fh:
        return frozenset(_directory(fh, path.name))
