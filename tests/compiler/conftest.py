"""Fixtures of the compiler tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import strategies as st


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty folder for loomc's caches (``LOOMC_CACHE_DIR``), content caches on."""
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOOMC_NO_CACHE", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def ast_cache_dir(cache_root: Path) -> Path:
    """Where the AST cache's entries go (tests/compiler/test_ast_cache.py)."""
    return cache_root / "ast"


@pytest.fixture
def policy_cache_dir(cache_root: Path) -> Path:
    """Where the policy cache's entries go (tests/compiler/test_policy_cache.py)."""
    return cache_root / "policy"


def _damage(entry: Path, data: st.DataObject) -> None:
    """Damage a cache entry as a disk or a careless hand might: a flipped byte, a cut, bytes
    added at the end, or nothing left."""
    raw = bytearray(entry.read_bytes())
    how = data.draw(st.sampled_from(["flip", "truncate", "append", "empty"]))
    if how == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= data.draw(st.integers(1, 255))
    elif how == "truncate":
        del raw[data.draw(st.integers(0, len(raw) - 1)) :]
    elif how == "append":
        raw += b"]"
    else:
        raw = bytearray()
    entry.write_bytes(bytes(raw))


@pytest.fixture
def damage() -> Callable[[Path, st.DataObject], None]:
    return _damage
