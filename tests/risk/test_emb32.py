"""The float32 copy of a router's train embeddings (``loomc.risk.emb32``): what ships is exactly
numpy's widening of the member it is named after, the default release has one (a cold run needs
it), the plain-Python router reads it, and a stale, damaged or foreign copy is never read."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.risk.emb32 import copy_path, read_copy, write_copy
from loomc.risk.files import DATA
from loomc.risk.pure import PureRouter
from loomc.risk.releases import DEFAULT_RELEASE, RELEASES

WRITE = "python -c \"from loomc.risk.emb32 import write_copy; from pathlib import Path; write_copy(Path('{}'))\""


@pytest.mark.parametrize("copy", sorted(DATA.glob("*.f32.npy")), ids=lambda p: p.name)
def test_every_shipped_copy_is_numpys_widening_of_the_member_it_names(copy: Path) -> None:
    npz = DATA / (copy.name.split(".train_emb-")[0] + ".npz")
    assert copy_path(npz) == copy, f"{copy.name} is stale: rewrite it with {WRITE.format(npz)}"
    with np.load(npz) as z:
        expected = z["train_emb"].astype(np.float32)
    got = np.load(copy)
    assert got.dtype == np.dtype("<f4") and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_the_default_release_ships_a_copy_for_cold_runs_and_it_alone() -> None:
    """Each copy is ~3.6 MB of package data: only the release a cold run loads has one."""
    npz = RELEASES[DEFAULT_RELEASE]
    assert read_copy(npz) is not None, f"a cold run would widen float16: {WRITE.format(npz)}"
    assert sorted(DATA.glob("*.f32.npy")) == [copy_path(npz)]


def _shape(npz: Path) -> tuple[int, int]:
    with np.load(npz) as z:
        rows, dim = z["train_emb"].shape
    return rows, dim


def _router_file(tmp_path: Path) -> Path:
    """A copy of the default's static router alone in a folder (no float32 copy beside it)."""
    dst = tmp_path / "router.npz"
    shutil.copyfile(RELEASES[DEFAULT_RELEASE], dst)
    return dst


def test_the_plain_router_reads_the_copy_and_gets_the_same_numbers(tmp_path: Path) -> None:
    npz = _router_file(tmp_path)
    widened = PureRouter(npz)
    assert read_copy(npz) is None
    copy = write_copy(npz)
    from_copy = PureRouter(npz)
    assert (from_copy.rows, from_copy.dim) == (widened.rows, widened.dim)
    assert list(from_copy.train_flat) == list(widened.train_flat)
    # It is the copy that is read: a copy with other numbers of the same shape moves the router.
    arr = np.load(copy)
    arr[0, 0] = 7.0
    np.save(copy, arr)
    assert PureRouter(npz).train_flat[0] == 7.0


def test_a_copy_of_an_earlier_member_is_never_read(tmp_path: Path) -> None:
    npz = _router_file(tmp_path)
    stale = write_copy(npz)
    with np.load(npz) as z:
        members = {k: z[k] for k in z.files}
    members["train_emb"] = members["train_emb"][::-1].copy()  # "retrained": new rows, same shape
    np.savez_compressed(npz, **members)
    assert copy_path(npz) != stale and stale.exists()
    assert read_copy(npz) is None
    assert list(PureRouter(npz).train_flat[:384]) == members["train_emb"][0].astype(float).tolist()
    # Writing the new copy removes the stale one.
    fresh = write_copy(npz)
    assert not stale.exists() and read_copy(npz) is not None and fresh != stale


@pytest.mark.parametrize(
    "damage",
    [
        lambda a: a.astype(np.float64),  # another dtype
        lambda a: a[:-1],  # a row short
        lambda a: a.reshape(-1),  # not rows
        lambda a: a.reshape(-1, a.shape[1] // 2),  # rows of half the width (any row count)
    ],
    ids=["float64", "short", "flat", "reshaped"],
)
def test_a_copy_not_shaped_as_the_member_is_ignored(tmp_path: Path, damage: object) -> None:
    npz = _router_file(tmp_path)
    widened = list(PureRouter(npz).train_flat)
    copy = write_copy(npz)
    np.save(copy, damage(np.load(copy)))  # type: ignore[operator]
    router = PureRouter(npz)
    assert (router.rows, router.dim) == _shape(npz)
    assert list(router.train_flat) == widened


def _real_header() -> bytes:
    out = io.BytesIO()
    rows, dim = _shape(RELEASES[DEFAULT_RELEASE])
    np.lib.format.write_array_header_1_0(
        out, np.lib.format.header_data_from_array_1_0(np.zeros((rows, dim), "<f4"))
    )
    return out.getvalue()


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keep=st.integers(min_value=0, max_value=130), noise=st.binary(max_size=300))
def test_any_short_or_garbled_copy_is_ignored_never_raises(
    tmp_path: Path, keep: int, noise: bytes
) -> None:
    npz = tmp_path / "router.npz"
    if not npz.exists():
        shutil.copyfile(RELEASES[DEFAULT_RELEASE], npz)
    path = copy_path(npz)
    assert path is not None
    path.write_bytes(_real_header()[:keep] + noise)  # a header cut anywhere, then noise
    assert read_copy(npz) is None
    assert (PureRouter(npz).rows, PureRouter(npz).dim) == _shape(npz)
