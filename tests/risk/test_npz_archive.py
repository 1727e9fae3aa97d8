"""The ``.npz`` reader's own zip reading (``loomc.risk.npz``, no ``zipfile``): the same bytes as
``zipfile`` on every shipped archive and on what numpy writes; a damaged archive is only ever
``NpzFormatError`` (the caller then lets numpy read the file), never another exception."""

from __future__ import annotations

import contextlib
import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk.files import DATA
from loomc.risk.npz import NpzFormatError, locate_member, read_members


def _zipfile_members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename.removesuffix(".npy"): zf.read(i) for i in zf.infolist()}


@pytest.mark.parametrize("path", sorted(DATA.glob("*.npz")), ids=lambda p: p.name)
def test_every_shipped_archive_reads_as_zipfile_reads_it(path: Path) -> None:
    expected = _zipfile_members(path)
    # The token table's archive (its one member, ``table``, ~12 MB) is located, not read whole,
    # at run time; every other archive is read member by member. (Told apart by that member,
    # not by size: v18's routers are over 4 MB.)
    if "table" in expected:
        names = tuple(n for n in expected if n != "table")
        _descr, shape, offset = locate_member(path, "table")
        table = expected["table"]
        assert (
            path.read_bytes()[offset : offset + 64]
            == table[len(table) - shape[0] * shape[1] :][:64]
        )
    else:
        names = ()
    got = read_members(path, names)
    assert set(got) == set(names or expected)
    for name, member in got.items():
        assert bytes(member.data) == expected[name][len(expected[name]) - len(member.data) :]


def _archive(compressed: bool) -> bytes:
    buf = io.BytesIO()
    save = np.savez_compressed if compressed else np.savez
    save(buf, a=np.arange(6, dtype=np.float64), t=np.array(["x", "yz"]), i=np.ones(5, np.int8))
    return buf.getvalue()


ARCHIVES = {False: _archive(False), True: _archive(True)}


@settings(max_examples=400, deadline=None)
@given(
    st.booleans(),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 10_000),
)
def test_a_damaged_archive_is_only_ever_a_format_error(
    tmp_path_factory: pytest.TempPathFactory,
    compressed: bool,
    edits: list[tuple[int, int]],
    cut: int,
) -> None:
    raw = bytearray(ARCHIVES[compressed])
    for at, value in edits:
        raw[at % len(raw)] = value
    if cut % 3 == 0:
        raw = raw[: cut % len(raw)]
    path = tmp_path_factory.mktemp("npz") / "damaged.npz"
    path.write_bytes(bytes(raw))
    for read in (
        lambda: read_members(path),
        lambda: read_members(path, ("a",)),
        lambda: locate_member(path, "i"),
    ):
        with contextlib.suppress(NpzFormatError):
            read()
